"""Dialogs: the modal questions any screen, pane or widget may ask (confirm, where to save).

They know nothing of the app, so every layer above may open one.
"""
