"""The trace simulator: event engine, site state, replays, metrics, experiments."""
