"""One router per page of the app."""
