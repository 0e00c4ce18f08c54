"""The Textual app: screens, widgets and the plain classes they draw (terminal, log buffer, keys)."""
