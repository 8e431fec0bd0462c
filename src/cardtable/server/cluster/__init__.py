"""Several processes: leases, ownership of tables, and the relay between processes."""
