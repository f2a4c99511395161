"""Restarts the Hindsight services after the database secret rotates, so tasks pick up the new password."""
