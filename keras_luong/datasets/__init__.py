"""Small generated tasks for sequence-to-sequence attention, made offline from pip packages."""
