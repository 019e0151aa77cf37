"""Record JAX's pytree behaviour as golden data for corejax.tree_util, corejax.tree and
corejax.flatten_util.

Run with a Python that has jax installed (never a corejax dependency):

    python tests/golden/gen_tree.py

Writes tests/golden/tree.json: {"jax_version": ..., "cases": {name: result}}. Each case is
a function body in CASES, run with the names `tu` (tree_util), `tree`, `ravel_pytree`,
`jax`, `jnp`, `np`, `collections`, `dataclasses`, `functools`, `NamedTuple` bound to one
framework's modules; tests/test_tree.py runs the same bodies on corejax and compares the
results as `describe` writes them: containers by type and order, structures and key paths
by their printed form, arrays by values, dtype and weak type, and an exception by its type
("raises"). Classes a case registers are defined inside it, so each run registers new ones.
"""
import json
import os
import re

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tree.json")

_PRELUDE = """
class P(NamedTuple):
    x: object
    y: object
"""

CASES = {
    # --- structures: flatten order, printed form, counts, node data ---------------------
    "flatten_none": "return tu.tree_flatten(None)",
    "flatten_leaf": "return tu.tree_flatten(1)",
    "flatten_empty_containers": "return [tu.tree_flatten(t) for t in [(), [], {}, (1,)]]",
    "flatten_nested": "return tu.tree_flatten({'b': [1, (2, None)], 'a': 3})",
    "flatten_namedtuple": "return tu.tree_flatten(P(1, [2, 3]))",
    "flatten_ordereddict":
        "return tu.tree_flatten(collections.OrderedDict([('b', 1), ('a', 2)]))",
    "flatten_defaultdict":
        "return tu.tree_flatten(collections.defaultdict(list, {'b': 1, 'a': 2}))",
    "flatten_int_keys": "return tu.tree_flatten({2: 'a', 1: 'b'})",
    "flatten_mixed_keys": "return tu.tree_flatten({1: 1, 'a': 2})",
    "flatten_dict_subclass": """
class MyDict(dict):
    pass
return tu.tree_flatten(MyDict(a=1))""",
    "flatten_set_and_strings": "return tu.tree_leaves([{1, 2}, 'ab', b'cd'])",
    "flatten_numpy_leaf": "return tu.tree_leaves([np.arange(3), np.float32(2)])",
    "counts": """
trees = [None, 1, (), [1, None], {'a': None}, {'a': [1, (2,)], 'b': P(3, None)}]
return [(tu.tree_structure(t).num_leaves, tu.tree_structure(t).num_nodes) for t in trees]""",
    "node_data": """
trees = [1, None, [1, 2], (1,), {'b': 1, 'a': 2}, P(1, 2),
         collections.OrderedDict(b=1, a=2), collections.defaultdict(int, b=1)]
return [tu.tree_structure(t).node_data() for t in trees]""",
    "children": "return tu.tree_structure({'a': [1, (2,)], 'b': 3}).children()",
    "treedef_children": "return tu.treedef_children(tu.tree_structure([1, (2,), None]))",
    "treedef_is_leaf": """
return [tu.treedef_is_leaf(tu.tree_structure(t)) for t in [1, None, (), [1], [None]]]""",
    "treedef_tuple": """
return [tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1, 2])]),
        tu.treedef_tuple([])]""",
    "treedef_equality": """
s = tu.tree_structure
od = collections.OrderedDict
return [s({'a': 1, 'b': 2}) == s({'b': 1, 'a': 2}), s(od(a=1, b=2)) == s(od(b=1, a=2)),
        s([1, 2]) == s((1, 2)), s([1]) == 3, s([1]) != s([2]),
        hash(s([1, {'a': 2}])) == hash(s([3, {'a': 4}]))]""",
    "treedef_pickle": """
import pickle
td = tu.tree_structure({'a': [1, (2, None)], 'b': collections.OrderedDict(z=1, y=2)})
back = pickle.loads(pickle.dumps(td))
return back, back == td""",
    "compose": """
s = tu.tree_structure
return [s([1, 2]).compose(s((1, 2))), s(1).compose(s([1, 2])),
        s([None, 1]).compose(s((1, 2)))]""",
    "walk": """
s = tu.tree_structure
node = lambda kids, data: ('node', kids, data)
return [s([1, (2, 3)]).walk(node, lambda l: ('leaf', l), [10, 20, 30]),
        s({'b': 1, 'a': (2,)}).walk(node, lambda l: l, [1, 2]),
        s(collections.OrderedDict(b=1, a=2)).walk(node, lambda l: l, [1, 2]),
        s([None]).walk(node, lambda l: l, [])]""",
    "walk_too_few": "return tu.tree_structure([1, 2]).walk(lambda k, d: k, lambda l: l, [1])",
    "walk_too_many": """
return tu.tree_structure([1, 2]).walk(lambda k, d: k, lambda l: l, [1, 2, 3])""",
    "from_iterable_tree": """
s = tu.tree_structure
return [s([1, (2, 3)]).from_iterable_tree([10, [20, 30]]),
        s({'a': 1, 'b': (2, 3)}).from_iterable_tree([10, [20, 30]]),
        s(P(1, 2)).from_iterable_tree([5, 6])]""",
    "from_iterable_tree_arity": """
return tu.tree_structure([1, 2]).from_iterable_tree((5, 6, 7))""",
    "from_node_data_and_children": """
F = tu.PyTreeDef.from_node_data_and_children
leaf = tu.tree_structure(1)
return [F(tu.default_registry, (dict, ['a', 'b']), [leaf, tu.tree_structure((1,))]),
        F(tu.default_registry, None, []),
        F(tu.default_registry, (P, None), [leaf, leaf]),
        F(tu.default_registry, (collections.OrderedDict, ('b', 'a')), [leaf, leaf])]""",
    "from_node_data_unregistered": """
return tu.PyTreeDef.from_node_data_and_children(tu.default_registry, (int, None), [])""",
    "unflatten": """
s = tu.tree_structure
od = collections.OrderedDict
return [tu.tree_unflatten(s({'b': 1, 'a': (2, None)}), [5, 6]),
        tu.tree_unflatten(s(od(b=1, a=2)), [5, 6]),
        tu.tree_unflatten(s(collections.defaultdict(int, b=1, a=2)), [5, 6]),
        tu.tree_unflatten(s(P(1, 2)), iter([7, 8])),
        tu.tree_unflatten(s(None), []), tu.tree_unflatten(s(1), [[3, 4]])]""",
    "unflatten_too_few": "return tu.tree_unflatten(tu.tree_structure([1, 2]), [1])",
    "unflatten_too_many": "return tu.tree_unflatten(tu.tree_structure([1, 2]), [1, 2, 3])",
    "unflatten_passes_tuple": """
seen = []
class Cap:
    pass
tu.register_pytree_node(Cap, lambda x: ((1, 2), None),
                        lambda a, c: seen.append(type(c).__name__) or Cap())
tu.tree_unflatten(tu.tree_structure(Cap()), [7, 8])
return seen""",
    "flatten_up_to": """
return tu.tree_structure([1, 2]).flatten_up_to([(1, 2), {'a': 3}])""",
    "flatten_up_to_type": "return tu.tree_structure([1, 2]).flatten_up_to((1, 2))",
    "flatten_up_to_keys": "return tu.tree_structure({'a': 1}).flatten_up_to({'b': 2})",
    "flatten_up_to_deep": "return tu.tree_structure([1, [2, 3]]).flatten_up_to([1, 2])",
    # --- is_leaf -----------------------------------------------------------------------
    "is_leaf_lists": """
return tu.tree_flatten({'a': [1, 2], 'b': 3}, is_leaf=lambda x: isinstance(x, list))""",
    "is_leaf_none": """
return [tu.tree_leaves([None, 1], is_leaf=lambda x: x is None),
        tu.tree_structure(None, is_leaf=lambda x: x is None),
        tu.tree_map(lambda x: 0 if x is None else x, [None, 1], is_leaf=lambda x: x is None)]""",
    "is_leaf_root": """
return tu.tree_flatten([[1], [2]], is_leaf=lambda x: isinstance(x, list))""",
    # --- key paths ---------------------------------------------------------------------
    "paths_nested": """
pairs, td = tu.tree_flatten_with_path({'b': [1, (2, None)], 'a': 3, 'c': P(4, 5)})
return (pairs, td, [tu.keystr(p) for p, _ in pairs],
        [tu.keystr(p, simple=True, separator='/') for p, _ in pairs])""",
    "paths_dicts": """
od = collections.OrderedDict([('b', 1), ('a', 2)])
dd = collections.defaultdict(list, {'b': 1, 'a': 2})
return [tu.tree_leaves_with_path(t) for t in [od, dd, {2: 'x', 1: 'y'}, {(1, 2): 3}]]""",
    "paths_leaf_and_none": """
return [tu.tree_leaves_with_path(1), tu.tree_leaves_with_path(None),
        tu.tree_leaves_with_path([None, 1]),
        tu.tree_flatten_with_path([None, 1], is_leaf=lambda x: x is None)]""",
    "paths_custom_nodes": """
class Box:
    def __init__(self, v):
        self.v = v
tu.register_pytree_node(Box, lambda b: ((b.v, [b.v]), 'aux'), lambda a, c: Box(c[0]))
class KBox:
    def __init__(self, v, w):
        self.v, self.w = v, w
tu.register_pytree_with_keys(
    KBox, lambda b: (((tu.GetAttrKey('v'), b.v), (tu.DictKey('w'), b.w)), None),
    lambda a, c: KBox(*c))
class W:
    def __init__(self, a):
        self.a = a
tu.register_pytree_node(W, lambda w: ((w.a,), None), lambda a, c: W(*c),
                        lambda w: (((tu.GetAttrKey('a'), w.a),), None))
pairs, td = tu.tree_flatten_with_path([Box(1), KBox(2, (3,)), W(4)])
return pairs, td, [tu.keystr(p) for p, _ in pairs]""",
    "paths_key_classes": """
@tu.register_pytree_with_keys_class
class KC:
    def __init__(self, a, b):
        self.a, self.b = a, b
    def tree_flatten_with_keys(self):
        return (((tu.GetAttrKey('a'), self.a), (tu.GetAttrKey('b'), self.b)), 'aux')
    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
@tu.register_pytree_node_class
class NC:
    def __init__(self, a, b):
        self.a, self.b = a, b
    def tree_flatten(self):
        return ((self.a, self.b), None)
    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)
out = tu.tree_map(lambda x: x * 10, KC(1, [2]))
return (tu.tree_flatten_with_path(KC(1, [2])), tu.tree_flatten(KC(1, [2])),
        tu.tree_flatten_with_path(NC(1, 2)), out.a, out.b)""",
    "paths_is_leaf_takes_path": """
t = {'a': [1, 2], 'b': 3}
return [tu.tree_leaves_with_path(t, is_leaf=lambda p, x: len(p) == 1,
                                 is_leaf_takes_path=True),
        tu.tree_flatten_with_path(t, is_leaf=lambda x: isinstance(x, list)),
        tu.tree_map_with_path(lambda p, x: tu.keystr(p), t,
                              is_leaf=lambda p, x: len(p) == 1, is_leaf_takes_path=True)]""",
    "key_entries": """
keys = [tu.DictKey('a'), tu.DictKey(1), tu.DictKey((1, 'a')), tu.SequenceKey(1),
        tu.GetAttrKey('x'), tu.FlattenedIndexKey(3)]
return ([repr(k) for k in keys], [str(k) for k in keys],
        [tu.DictKey('a') == tu.DictKey('a'), tu.DictKey(1) == tu.SequenceKey(1),
         tu.DictKey(1) == tu.DictKey(True), hash(tu.DictKey('a')) == hash(tu.DictKey('a'))],
        (tu.DictKey('a').key, tu.SequenceKey(1).idx, tu.GetAttrKey('x').name,
         tu.FlattenedIndexKey(3).key),
        (tu.DictKey.__match_args__, tu.SequenceKey.__match_args__,
         tu.GetAttrKey.__match_args__, tu.FlattenedIndexKey.__match_args__))""",
    "key_unhashable": "return repr(tu.DictKey([1]))",
    "key_order": "return tu.SequenceKey(1) < tu.SequenceKey(2)",
    "keystr": """
path = (tu.DictKey('a'), tu.SequenceKey(0), tu.GetAttrKey('w'), tu.FlattenedIndexKey(2))
return [tu.keystr(path), tu.keystr(path, simple=True), tu.keystr(path, simple=True,
        separator='.'), tu.keystr(path, separator='/'), tu.keystr(('a', 1)),
        tu.keystr(('a', 1), simple=True), tu.keystr((1, 'x', tu.DictKey('k'))), tu.keystr(())]""",
    # --- map ---------------------------------------------------------------------------
    "map_basic": "return tu.tree_map(lambda x: x * 2, {'b': [1, (2, None)], 'a': 3})",
    "map_leaf_root": "return tu.tree_map(lambda x: x * 2, 3)",
    "map_none_subtree": "return tu.tree_map(lambda a: a, {'a': None, 'b': 1})",
    "map_dict_order": "return list(tu.tree_map(lambda x: x, {'b': 1, 'a': 2}).keys())",
    "map_rest_none": "return tu.tree_map(lambda a, b: (a, b), [1, 2], [None, 3])",
    "map_rest_subtrees": """
return tu.tree_map(lambda a, b: (a, b), [1, 2], [[5, 6], {'x': 3}])""",
    "map_rest_none_where_tree_has_leaf": "return tu.tree_map(lambda a, b: b, {'a': 1}, {'a': None})",
    "map_tree_none_rest_leaf": "return tu.tree_map(lambda a, b: a, [None, 2], [1, 3])",
    "map_length_mismatch": "return tu.tree_map(lambda a, b: a, [1, 2], [1, 2, 3])",
    "map_type_mismatch": "return tu.tree_map(lambda a, b: a, [1, 2], (1, 2))",
    "map_keys_mismatch": "return tu.tree_map(lambda a, b: a, {'a': 1}, {'b': 1})",
    "map_dict_vs_ordereddict": """
return tu.tree_map(lambda a, b: a, {'a': 1}, collections.OrderedDict(a=1))""",
    "map_dict_vs_defaultdict": """
return tu.tree_map(lambda a, b: a, {'a': 1}, collections.defaultdict(int, a=1))""",
    "map_is_leaf_not_for_rest": """
return tu.tree_map(lambda a, b: (a, b), [[1, 2], 3], [[4, 5], 6],
                   is_leaf=lambda x: isinstance(x, list) and len(x) == 2 and x[0] == 1)""",
    "map_arity": "return tu.tree_map(lambda a: a, [1], [2])",
    "map_with_path": """
return [tu.tree_map_with_path(lambda p, x: (tu.keystr(p), x), {'a': [1, 2]}),
        tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x, y), {'a': [1, 2]},
                              {'a': [3, 4]})]""",
    "map_with_path_mismatch": "return tu.tree_map_with_path(lambda p, a, b: a, [1], [1, 2])",
    "map_namedtuple": "return tu.tree_map(lambda x: x + 1, P(1, (2, 3)))",
    # --- reduce, all, transpose, broadcast ---------------------------------------------
    "reduce": """
add = lambda a, b: a + b
pair = lambda a, b: (a, b)
return [tu.tree_reduce(add, [1, (2, 3)]), tu.tree_reduce(add, [], 5),
        tu.tree_reduce(pair, [1], None), tu.tree_reduce(pair, {'b': 1, 'a': 2}, 0),
        tu.tree_reduce(add, [[1], [2]], [],
                       is_leaf=lambda x: isinstance(x, list) and len(x) == 1)]""",
    "reduce_empty": "return tu.tree_reduce(lambda a, b: a + b, [])",
    "reduce_associative": """
pair = lambda a, b: (a, b)
return [tu.tree_reduce_associative(pair, [1, 2, 3, 4, 5]),
        tu.tree_reduce_associative(pair, [1, 2, 3], identity=0),
        tu.tree_reduce_associative(pair, [7]),
        tu.tree_reduce_associative(pair, [], identity=0),
        tu.tree_reduce_associative(pair, list(range(8)))]""",
    "reduce_associative_empty": """
return tu.tree_reduce_associative(lambda a, b: a + b, [])""",
    "all": """
return [tu.tree_all([1, (True, 0)]), tu.tree_all([]), tu.tree_all([1, {'a': True}]),
        tu.tree_all([[], 1], is_leaf=lambda x: x == []), tu.tree_all(None)]""",
    "all_array_leaf": "return tu.tree_all([np.array([1, 0])])",
    "all_leaves": """
return [tu.all_leaves([1, 2, None]), tu.all_leaves([1, 2, [3]]), tu.all_leaves(iter([1, 2])),
        tu.all_leaves([1, 2, [3]], is_leaf=lambda x: isinstance(x, list)),
        tu.all_leaves([np.ones(2), 1.0]), tu.all_leaves([])]""",
    "transpose": """
s = tu.tree_structure
return [tu.tree_transpose(s([0, 0]), s((0, 0)), [(1, 2), (3, 4)]),
        tu.tree_transpose(s([0, 0]), None, [(1, 2), (3, 4)]),
        tu.tree_transpose(s(0), s((0, 0)), (1, 2)),
        tu.tree_transpose(s([0, 0]), s((0, 0)), [(1, 2), [3, 4]]),
        tu.tree_transpose(s({'a': 0, 'b': 0}), s([0, 0, 0]),
                          {'a': [1, 2, 3], 'b': [4, 5, 6]})]""",
    "transpose_mismatch": """
s = tu.tree_structure
return tu.tree_transpose(s([0, 0]), s((0, 0, 0)), [(1, 2), (3, 4)])""",
    "transpose_empty_outer": """
s = tu.tree_structure
return tu.tree_transpose(s([]), s((0, 0)), [])""",
    "transpose_empty_outer_inferred": """
return tu.tree_transpose(tu.tree_structure([]), None, [])""",
    "broadcast": """
return [tu.tree_broadcast([1, {'a': 2}], [[3, 4], {'a': (5, 6)}]),
        tu.tree_broadcast([1, None], [[3, 4], None]),
        tu.tree_broadcast(1, {'x': [1, 2], 'y': None}),
        tu.tree_broadcast([1, [2]], [[3, 4], [5]],
                          is_leaf=lambda x: isinstance(x, list) and len(x) == 1)]""",
    "broadcast_mismatch": "return tu.tree_broadcast([1, 2], [[3, 4]])",
    # --- one level, node types ---------------------------------------------------------
    "flatten_one_level": """
return [tu.flatten_one_level({'b': [1], 'a': 2}), tu.flatten_one_level(None),
        tu.flatten_one_level(P(1, 2)),
        tu.flatten_one_level(collections.OrderedDict(b=1, a=2)),
        tu.flatten_one_level(collections.defaultdict(int, b=1, a=2)),
        tu.flatten_one_level([1, 2])]""",
    "flatten_one_level_leaf": "return tu.flatten_one_level(1)",
    "flatten_one_level_array": "return tu.flatten_one_level(jnp.ones(1))",
    "flatten_one_level_with_keys": """
return [tu.flatten_one_level_with_keys({'b': [1], 'a': 2}),
        tu.flatten_one_level_with_keys((1, 2)), tu.flatten_one_level_with_keys([3])]""",
    "is_tree_node": """
return [tu.is_tree_node(t) for t in [list, tuple, dict, int, type(None),
        collections.OrderedDict, collections.defaultdict, P, set]] + [tu.is_tree_node(P(1, 2))]""",
    "default_registry": """
r = tu.default_registry
return [r.flatten([1, (2,)]), r.flatten_with_path([1, (2,)]),
        r.flatten_one_level({'a': 1})]""",
    # --- registration ------------------------------------------------------------------
    "register_duplicate_builtin": """
return tu.register_pytree_node(list, lambda x: (x, None), lambda a, c: c)""",
    "register_duplicate": """
class A:
    pass
tu.register_pytree_node(A, lambda x: ((), None), lambda a, c: A())
return tu.register_pytree_node(A, lambda x: ((), None), lambda a, c: A())""",
    "register_bad_flatten_output": """
class Bad:
    pass
tu.register_pytree_node(Bad, lambda x: 5, lambda a, c: None)
return tu.tree_flatten(Bad())""",
    "register_bad_children": """
class Bad:
    pass
tu.register_pytree_node(Bad, lambda x: (5, None), lambda a, c: None)
return tu.tree_flatten(Bad())""",
    "register_generator_children": """
class Gen:
    pass
tu.register_pytree_node(Gen, lambda x: ((i for i in range(2)), None), lambda a, c: list(c))
leaves, td = tu.tree_flatten(Gen())
return leaves, td, tu.tree_unflatten(td, [7, 8])""",
    "register_custom_repr": """
class Outer:
    class Inner:
        def __init__(self, v):
            self.v = v
tu.register_pytree_node(Outer.Inner, lambda b: ((b.v,), {'k': 1}), lambda a, c: None)
return tu.tree_structure([Outer.Inner(1), Outer.Inner(2)])""",
    "register_static": """
@tu.register_static
class S:
    def __init__(self, v):
        self.v = v
    def __eq__(self, o):
        return isinstance(o, S) and o.v == self.v
    def __hash__(self):
        return hash(self.v)
    def __repr__(self):
        return f'S({self.v})'
leaves, td = tu.tree_flatten([S(1), 2])
back = tu.tree_unflatten(td, [5])
return (leaves, td, tu.tree_flatten_with_path([S(1), 2])[0], back,
        tu.tree_map(lambda x: x + 1, {'s': S(3), 'x': 1}))""",
    "dataclass_auto": """
@tu.register_dataclass
@dataclasses.dataclass
class D:
    a: object
    b: object
    s: str = tree.static(default='k')
leaves, td = tu.tree_flatten(D(1, [2]))
return (leaves, td, tu.tree_flatten_with_path(D(1, 2))[0],
        tu.tree_map(lambda x: x * 10, D(1, 2)))""",
    "dataclass_explicit": """
@dataclasses.dataclass
class D:
    x: object
    y: object
    z: str
tu.register_dataclass(D, data_fields=['x', 'y'], meta_fields=['z'])
return tu.tree_flatten(D(1, 2, 'q')), tu.tree_map(lambda v: v + 1, D(1, 2, 'q'))""",
    "dataclass_missing_field": """
@dataclasses.dataclass
class D:
    x: object
    y: object
return tu.register_dataclass(D, data_fields=['x'], meta_fields=[])""",
    "dataclass_only_data": """
@dataclasses.dataclass
class D:
    x: object
    y: object
return tu.register_dataclass(D, data_fields=['x', 'y'])""",
    "dataclass_only_meta": """
@dataclasses.dataclass
class D:
    x: object
return tu.register_dataclass(D, meta_fields=['x'])""",
    "dataclass_not_dataclass": """
class ND:
    def __init__(self, x, y):
        self.x, self.y = x, y
return tu.register_dataclass(ND)""",
    "dataclass_plain_class": """
class ND:
    def __init__(self, x, y):
        self.x, self.y = x, y
tu.register_dataclass(ND, ['x'], ['y'])
out = tu.tree_map(lambda v: v + 1, ND(1, 2))
return tu.tree_flatten(ND(1, 2))[0], out.x, out.y""",
    "dataclass_init_false": """
@dataclasses.dataclass
class D:
    x: object
    y: object = dataclasses.field(init=False, default=0)
return tu.register_dataclass(D)""",
    "dataclass_drop_fields": """
@dataclasses.dataclass
class D:
    x: object
    y: object = dataclasses.field(init=False, default=0)
tu.register_dataclass(D, ['x'], [], drop_fields=['y'])
return tu.tree_flatten(D(1))""",
    "dataclass_overlap": """
@dataclasses.dataclass
class D:
    x: object
    y: object
return tu.register_dataclass(D, ['x', 'y'], ['y'])""",
    "dataclass_twice": """
@dataclasses.dataclass
class D:
    x: object
tu.register_dataclass(D)
return tu.register_dataclass(D)""",
    "dataclass_post_init_runs": """
calls = []
@dataclasses.dataclass
class D:
    x: object
    def __post_init__(self):
        calls.append(self.x)
tu.register_dataclass(D)
out = tu.tree_map(lambda v: v + 1, D(1))
return out.x, calls""",
    "dataclass_frozen": """
@dataclasses.dataclass(frozen=True)
class D:
    x: object
tu.register_dataclass(D)
return tu.tree_map(lambda v: v + 1, D(1)).x""",
    "tree_static_field": """
f = tree.static(default=3, metadata={'other': 1})
return f.default, dict(f.metadata)""",
    # --- Partial -----------------------------------------------------------------------
    "partial": """
add3 = lambda x, y, z=0: x + y + z
p = tu.Partial(add3, 1, z=10)
leaves, td = tu.tree_flatten(p)
return p(2), leaves, td.num_leaves, td.num_nodes, td.children(), p.args, p.keywords""",
    "partial_nested_static": """
inner = tu.Partial(lambda a, b, c=0: (a, b, c), 1)
outer = tu.Partial(inner, 2, c=3)
return (outer(), tu.tree_leaves(outer), outer.args,
        tu.tree_leaves(tu.Partial(functools.partial(lambda a, b: a + b, 1), 2)))""",
    "partial_isinstance_eq": """
p = tu.Partial(print, 1)
return (isinstance(p, functools.partial), p == tu.Partial(print, 1),
        tu.tree_structure(tu.Partial(print, 1)) == tu.tree_structure(tu.Partial(print, 2)),
        repr(tu.Partial(print, 1, k=2)))""",
    "partial_transforms": """
mul = jnp.multiply
return [jax.jit(lambda p, x: p(x))(tu.Partial(jnp.add, jnp.float32(1)), 2.0),
        jax.vmap(lambda p: p(1.0))(tu.Partial(mul, jnp.arange(3.0))),
        jax.grad(lambda p: p(2.0))(tu.Partial(mul, 3.0)).args,
        jax.jit(lambda x: tu.Partial(mul, x))(2.0)(4.0)]""",
    # --- jax.tree ----------------------------------------------------------------------
    "tree_module": """
t = {'b': [1, 2], 'a': (3,)}
leaves, td = tree.flatten(t)
return [tree.leaves(t), tree.structure(t), tree.map(lambda x: x + 1, t),
        tree.unflatten(td, [9, 8, 7]), tree.reduce(lambda a, b: a + b, t),
        tree.all(t), tree.flatten_with_path(t)[0], tree.leaves_with_path(t),
        tree.map_with_path(lambda p, x: tu.keystr(p), t),
        tree.transpose(tree.structure([0, 0]), None, [(1, 2), (3, 4)]),
        tree.broadcast([1, 2], [[0, 0], (0,)]),
        tree.reduce_associative(lambda a, b: a + b, t)]""",
    # --- ravel_pytree ------------------------------------------------------------------
    "ravel_uniform": "return ravel_roundtrip({'a': jnp.ones(2), 'b': jnp.zeros((1, 2))})",
    "ravel_promoted": """
return [ravel_roundtrip([jnp.ones(2, jnp.int32), jnp.ones(1, jnp.float16)]),
        ravel_roundtrip([jnp.ones(2, bool), jnp.ones(1, jnp.int8)]),
        ravel_roundtrip([jnp.ones(2, jnp.uint8), jnp.ones(1, jnp.int8)]),
        ravel_roundtrip([np.ones(2, np.float64), np.ones(1, np.int64)])]""",
    "ravel_weak": """
return [ravel_roundtrip([1.0, 2]), ravel_roundtrip([1, 2]),
        ravel_roundtrip([jnp.float32(1), 2.0]), ravel_roundtrip(3.0),
        ravel_roundtrip(np.int64(3))]""",
    "ravel_empty": "return [ravel_roundtrip([]), ravel_roundtrip(None), ravel_roundtrip({})]",
    "ravel_non_array_leaf": "return ravel_pytree(['a'])",
    # --- typed PRNG key arrays: leaves of the tree functions, carried by transformations ---
    "typed_key_leaves": """
k = jax.random.key(3)
ks = jax.random.split(k, 4)
leaves, td = tu.tree_flatten({'k': k, 'ks': ks, 'x': 1.0})
return [td, [str(getattr(l, 'dtype', None)) for l in leaves],
        [getattr(l, 'shape', None) for l in leaves],
        tu.tree_map(lambda x: x.shape, {'k': k, 'ks': ks}),
        tree.map(jax.random.key_data, [k, ks])]""",
    "typed_key_through_transformations": """
k = jax.random.key(7)
ks = jax.random.split(k, 3)
out = jax.jit(lambda t: t)({'k': k, 'n': 2})
mapped = jax.vmap(lambda key: (key, jax.random.key_data(key)))(ks)
carry, ys = jax.lax.scan(lambda c, _: (jax.random.split(c)[0], jax.random.key_data(c)), k,
                         None, length=2)
return [tu.tree_structure(out), jax.random.key_data(out['k']), tu.tree_structure(mapped),
        jax.random.key_data(mapped[0]), jax.random.key_data(carry), ys,
        jax.random.key_data(jax.device_put(k))]""",
    "unravel_uniform_dtype_free": """
un = ravel_pytree([jnp.ones(2)])[1]
return [un(jnp.ones(2, jnp.int32)), un(np.ones(2, np.float64)), un(jnp.ones((2, 1)))]""",
    "unravel_wrong_size": "return ravel_pytree([jnp.ones(2)])[1](jnp.ones(3))",
    "unravel_wrong_leading": "return ravel_pytree([jnp.ones(2)])[1](jnp.ones((1, 2)))",
    "unravel_scalar": "return ravel_pytree([jnp.ones(2)])[1](jnp.float32(1))",
    "unravel_list": "return ravel_pytree([jnp.ones(2)])[1]([1.0, 2.0])",
    "unravel_promoted_wrong_dtype": """
return ravel_pytree([jnp.ones(2), jnp.ones(1, jnp.int32)])[1](jnp.ones(3, jnp.int32))""",
    "unravel_promoted_wrong_size": """
return ravel_pytree([jnp.ones(2), jnp.ones(1, jnp.int32)])[1](jnp.ones(4))""",
    "unravel_promoted_list": """
return ravel_pytree([jnp.ones(2), jnp.ones(1, jnp.int32)])[1]([1.0, 2.0, 3.0])""",
    "unravel_promoted_2d": """
return ravel_pytree([jnp.ones(2), jnp.ones(1, jnp.int32)])[1](jnp.ones((3, 1)))""",
    "unravel_equality": """
un = ravel_pytree([jnp.ones(2), jnp.ones(1, jnp.int32)])[1]
same = ravel_pytree([jnp.zeros(2), jnp.ones(1, jnp.int32)])[1]
other = ravel_pytree([jnp.zeros(3), jnp.ones(1, jnp.int32)])[1]
return un == same, hash(un) == hash(same), un == other""",
    "ravel_transforms": """
t = {'a': jnp.arange(2.0), 'b': 3.0}
mixed = [jnp.ones(2), jnp.ones(1, jnp.float16)]
return [jax.jit(lambda t: ravel_pytree(t)[0])(t),
        jax.grad(lambda t: jnp.sum(ravel_pytree(t)[0] ** 2))(t),
        jax.grad(lambda t: jnp.sum(ravel_pytree(t)[0] ** 2))(mixed),
        jax.grad(lambda v: ravel_pytree(mixed)[1](v)[1].sum().astype(jnp.float32))(
            jnp.ones(3)),
        jax.vmap(lambda t: ravel_pytree(t)[0])({'a': jnp.ones((3, 2)), 'b': jnp.arange(3.)}),
        jax.jit(lambda v: ravel_pytree({'a': jnp.ones(2), 'b': jnp.ones(1, jnp.int32)})[1](v))(
            jnp.arange(3.0))]""",
}

_RAVEL_HELPER = """
def ravel_roundtrip(t):
    flat, unravel = ravel_pytree(t)
    return flat, unravel(flat)
"""


def run_case(name: str, env: dict):
    """The result of CASES[name] run with the framework names in `env`, described."""
    namespace = dict(env)
    exec(_PRELUDE + _RAVEL_HELPER, namespace)
    body = "".join(f"    {line}\n" for line in CASES[name].strip("\n").splitlines())
    exec(f"def _case():\n{body}", namespace)
    try:
        return describe(namespace["_case"]())
    except Exception as e:  # noqa: BLE001  (the exception type is the result)
        return {"raises": type(e).__name__}


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def describe(x):
    """A JSON form of a result, the same for equal results of JAX and corejax."""
    import numpy as np
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, float)) and type(x) in (int, float):
        return {type(x).__name__: x}
    if isinstance(x, bytes):
        return {"bytes": x.decode()}
    if isinstance(x, type):
        return {"class": x.__name__}
    if type(x).__name__ == "PyTreeDef":
        return {"treedef": _ADDRESS.sub("", repr(x))}
    if type(x).__name__ in ("DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey"):
        return {"key": repr(x)}
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return {"namedtuple": type(x).__name__, "items": [describe(v) for v in x]}
    if isinstance(x, (tuple, list)):
        return {type(x).__name__: [describe(v) for v in x]}
    if isinstance(x, dict):
        kind = type(x).__name__
        out = {kind: [[describe(k), describe(v)] for k, v in x.items()]}
        if kind == "defaultdict":
            out["factory"] = describe(x.default_factory)
        return out
    if isinstance(x, (set, frozenset)):
        return {"set": sorted((describe(v) for v in x), key=json.dumps)}
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        arr = np.asarray(x)
        weak = bool(getattr(x, "weak_type", False))
        kind = "array" if hasattr(x, "weak_type") else "numpy"
        return {kind: arr.tolist(), "dtype": arr.dtype.name, "weak": weak,
                "shape": list(arr.shape)}
    if callable(x):
        return {"callable": type(x).__name__}
    return {"object": type(x).__name__}


def main():
    import collections
    import dataclasses
    import functools
    from typing import NamedTuple

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.flatten_util import ravel_pytree

    env = dict(tu=jax.tree_util, tree=jax.tree, ravel_pytree=ravel_pytree, jax=jax, jnp=jnp,
               np=np, collections=collections, dataclasses=dataclasses, functools=functools,
               NamedTuple=NamedTuple)
    results = {name: run_case(name, env) for name in CASES}
    with open(OUT, "w") as f:
        json.dump({"jax_version": jax.__version__, "cases": results}, f, indent=1,
                  sort_keys=True)
        f.write("\n")
    print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
    main()
