"""A stand-in for ml_collections.ConfigDict: a dict whose entries are also attributes."""


class ConfigDict(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"ConfigDict has no field {name!r}; fields: {sorted(self)}")

    def __setattr__(self, name, value):
        self[name] = value
