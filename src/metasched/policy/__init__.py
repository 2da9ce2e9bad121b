"""Pure scheduling policies (no I/O): local schedulers, queue orders, meta-schedulers, mappers."""
