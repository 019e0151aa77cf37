"""The module system's errors (flax.errors): each names the module or scope involved."""

__all__ = ["NNError", "FlaxError", "ScopeParamNotFoundError", "ScopeParamShapeError",
           "ScopeCollectionNotFound", "ScopeVariableNotFoundError", "ScopeVariableNotFound",
           "ModifyScopeVariableError", "InvalidRngError", "NameInUseError",
           "AssignSubModuleError", "CallCompactUnboundModuleError",
           "SetAttributeFrozenModuleError", "ApplyScopeInvalidVariablesTypeError",
           "ApplyModuleInvalidMethodError", "CallUnbindOnUnboundModuleError",
           "CallShareScopeOnUnboundModuleError", "PartitioningUnspecifiedError"]


class NNError(Exception):
    """Base class of the errors the module system raises (Flax's FlaxError)."""


FlaxError = NNError


class ScopeParamNotFoundError(NNError):
    def __init__(self, name, path, hint=""):
        super().__init__(f'Could not find parameter named "{name}" in scope {path}.{hint}')


class ScopeParamShapeError(NNError, ValueError):
    def __init__(self, name, path, expected, actual):
        super().__init__(
            f'Initializer expected to generate shape {tuple(expected)} but got shape '
            f'{tuple(actual)} instead for parameter "{name}" in {path}. The module\'s '
            "attributes or the input shape no longer match the variables passed to apply.")


class ScopeCollectionNotFound(NNError):
    def __init__(self, col, name, path):
        super().__init__(
            f'Tried to access "{name}" from collection "{col}" in {path} but the collection '
            f'is empty. Pass variables that include "{col}" (the full dict returned by init), '
            f'or make it mutable: apply(..., mutable=["{col}"]).')


class ScopeVariableNotFoundError(NNError):
    def __init__(self, name, col, path):
        super().__init__(f'No Variable named "{name}" for collection "{col}" exists in '
                         f'{path}.')


class ModifyScopeVariableError(NNError):
    def __init__(self, col, name, path):
        super().__init__(
            f'Cannot update variable "{name}" in {path} because collection "{col}" is '
            f'immutable. Pass mutable=["{col}"] to apply and use the returned updates.')


class InvalidRngError(NNError, ValueError):
    pass


class NameInUseError(NNError):
    pass


class AssignSubModuleError(NNError):
    pass


class CallCompactUnboundModuleError(NNError):
    pass


class SetAttributeFrozenModuleError(NNError):
    pass


class ApplyScopeInvalidVariablesTypeError(NNError, TypeError):
    pass




ScopeVariableNotFound = ScopeVariableNotFoundError  # the name this package used first


class ApplyModuleInvalidMethodError(NNError):
    def __init__(self, method):
        super().__init__(f"Cannot call apply(): {method!r} is not a method of the module. Pass "
                         "method= a method of the module, its name as a string, or a function "
                         "taking the module as first argument.")


class CallUnbindOnUnboundModuleError(NNError):
    def __init__(self):
        super().__init__("Can't call `unbind()` on unbound modules: only modules returned by "
                         "bind() (or seen inside init/apply) carry variables.")


class CallShareScopeOnUnboundModuleError(NNError):
    def __init__(self):
        super().__init__("Can't call `share_scope` on unbound modules: call it in setup() or "
                         "in a method run by init/apply, where both modules are bound.")


class PartitioningUnspecifiedError(NNError):
    def __init__(self, target):
        super().__init__('Trying to transform a Partitioned variable but "partition_name" is '
                         f"not specified in metadata_params: {target!r}. Pass "
                         "metadata_params={nn.PARTITION_NAME: 'axis name'} to the lifted "
                         "transformation.")
