"""The HTTP surface: the app and its lifespan, the connection's limits, middleware, keys, the
routes and their wire schemas, the one error table, the OpenAPI document and the search page's
files. It turns requests into the engine's queries and domain errors into statuses; nothing
below it knows HTTP."""
