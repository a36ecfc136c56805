"""Cloud GPU price lists: one adapter per native format, one normalised shape, validation, history."""
