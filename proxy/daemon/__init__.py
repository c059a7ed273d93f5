"""The daemon: the composition root that builds the subsystems from the options and configuration, wires them
together, runs them and stops them; the ``bruce`` command; the adapters between subsystems (spool, status, plog).

Modules: ``cli`` (the ``bruce`` command), ``daemon`` (the composition root), ``assembly`` (pure set-up helpers),
``shutdown`` (the ordered stop), ``spooling`` (the spool opened, replayed, shown), ``exactly_once`` (the batch journal
settled at start), ``status_source`` (the status pages' view of the daemon), ``plog_inputs`` (the plog listeners as an
input), ``embedded`` (the tansu broker of try-out mode), ``systemd`` (sd_notify).
Rule: this package may import every subsystem; no subsystem imports it.
"""
