"""The process runtime: the uvicorn server of one process (signals, drain), the supervisor of
several worker processes, and what every server process sets up before it serves."""
