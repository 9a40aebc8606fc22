"""Executors: the code behind each kind of agent, one module per kind."""
