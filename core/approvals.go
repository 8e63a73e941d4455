package core

func (ConfirmationPending) EventName() string { return "confirmation.pending" }

func (ConfirmationDecided) EventName() string { return "confirmation.decided" }
