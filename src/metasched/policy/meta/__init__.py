"""Meta-schedulers: which site(s) get a job."""
