"""Tables and figures of results."""
