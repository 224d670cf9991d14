"""The HTTP service: API tokens, authentication and the FastAPI application."""
