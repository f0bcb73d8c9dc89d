"""Schema validation (SCH): the schema store, compiled validators and their messages."""
