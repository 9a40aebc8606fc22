"""Push notifications: per-task webhook configs and their deliveries."""
