"""Widgets: each draws one thing and holds no business logic."""
