"""Hosted agents: their cards, skills and A2A endpoints."""
