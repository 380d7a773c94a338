"""The catalog's lifecycle: loading bundles and encoders into a catalog, placing indexes,
publishing it, reloading new versions (in every worker of a server) and the state one app
serves from."""
