"""`bbrowse serve`: a local implementation of the Browser Instance Control Service."""
