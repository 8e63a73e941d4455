package discovery

import (
	"strings"
	"sync"
)

// synonymGroups are everyday words people use for the same operation or
// thing in tool texts: a query says "remove", a tool "delete". Each line
// is one group; every word of it widens to the others (at weightSynonym).
// General vocabulary of software tools only: nothing here names a tool.
var synonymGroups = []string{
	"delete remove erase destroy drop forget",
	"create make add new open",
	"update edit modify change set",
	"get fetch retrieve read show view look",
	"list enumerate browse",
	"search find query lookup",
	"issue ticket bug",
	"repository repo project",
	"message chat post",
	"send post notify",
	"file document",
	"folder directory dir",
	"run execute exec invoke",
	"user person member people account",
	"picture image photo screenshot",
	"page website site url web",
	"pr pull merge",
	"comment reply note",
	"close resolve archive",
	"move rename",
	"error exception crash failure",
	"customer client contact",
	"payment charge invoice",
	"database db sql table",
	"click press tap",
	"time date clock",
	"address location place",
	"route direction",
	"summary summarize summarise",
	"team organization org workspace",
	"label tag",
	"assign assignee owner",
	"whoami me self viewer authenticated",
	"sum add total plus",
}

// synonyms maps a term to the other terms of its groups. Built on the
// first search, not in the package's initialiser: a gateway without
// tool search never needs it (QB-5).
var synonyms = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		var terms []string
		for _, w := range strings.Fields(g) {
			terms = append(terms, Stem(fold(w)))
		}
		for _, t := range terms {
			for _, o := range terms {
				if o != t && !contains(m[t], o) {
					m[t] = append(m[t], o)
				}
			}
		}
	}
	return m
})

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
