"""pmap over 4 CPU devices against JAX's pmap (tests/golden/pmap.json, written by
tests/golden/gen_pmap.py with 4 host devices), the devices' API, and the errors."""
import importlib.util
import json
import os

import numpy as np
import pytest

from conftest import assert_described_close, cpu_devices
import corejax as jax
import corejax.numpy as jnp
from corejax import array as _array, lax
from corejax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding

_GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
_spec = importlib.util.spec_from_file_location("gen_pmap",
                                               os.path.join(_GOLDEN_DIR, "gen_pmap.py"))
gen_pmap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_pmap)
with open(os.path.join(_GOLDEN_DIR, "pmap.json")) as _f:
    GOLDEN = json.load(_f)["cases"]

# A pmap under another transformation runs as vmap there, and its result is not marked as
# sharded (JAX's is); nested pmap is compared with JAX's vmap of vmap.
NO_SPEC = {"jit_of_pmap", "grad_of_pmap", "vmap_of_pmap", "nested"}


@pytest.fixture(scope="module", autouse=True)
def four_devices_for_module():
    with cpu_devices(4):
        yield


def _strip_spec(d):
    if isinstance(d, list):
        return [_strip_spec(v) for v in d]
    if isinstance(d, dict) and "value" not in d and "raises" not in d:
        return {k: _strip_spec(v) for k, v in d.items()}
    return {k: v for k, v in d.items() if k != "spec"}


def test_golden_cases_match_jax():
    assert sorted(GOLDEN) == sorted(gen_pmap.CASES), \
        "run tests/golden/gen_pmap.py under JAX to record the new cases"
    env = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}
    failures = []
    for name in sorted(gen_pmap.CASES):
        got = gen_pmap.run_case(name, env, gen_pmap.COREJAX_BODIES)
        want = GOLDEN[name]
        if name in NO_SPEC:
            got, want = _strip_spec(got), _strip_spec(want)
        try:
            assert_described_close(got, want, name)
        except AssertionError as e:
            failures.append(f"{name}: {e}\n  got {str(got)[:300]}\n  want {str(want)[:300]}")
    assert not failures, "\n".join(failures)


def test_devices_and_placement():
    devs = jax.devices()
    assert [str(d) for d in devs] == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    assert jax.device_count() == jax.local_device_count() == 4
    assert jax.local_devices() == devs and jax.devices("cpu") == devs
    assert (devs[3].id, devs[3].platform, devs[3].device_kind, devs[3].process_index) == \
        (3, "cpu", "cpu", 0)
    x = jnp.arange(6.0)
    assert not x.committed and x.sharding == SingleDeviceSharding(devs[0])
    y = jax.device_put(x, devs[2])
    assert y.committed and y.device == devs[2] and y.devices() == {devs[2]}
    assert repr(y.sharding) == "SingleDeviceSharding(device=CpuDevice(id=2), memory_kind=device)"
    np.testing.assert_array_equal(np.asarray(y), np.arange(6.0))
    # computations follow their committed operands (eagerly, jitted, differentiated);
    # operands committed to two devices are an error
    for out in (y + 1, jnp.sin(y) * x, jax.jit(lambda a: a * 2)(y),
                jax.grad(lambda a: (a ** 2).sum())(y)):
        assert out.committed and out.device == devs[2]
    assert not (x + 1).committed and jax.jit(lambda a: a * 2)(x).device == devs[0]
    with pytest.raises(ValueError, match="incompatible devices.*cpu:2.*cpu:1"):
        y + jax.device_put(x, devs[1])
    with pytest.raises(ValueError, match="incompatible devices"):
        jax.jit(lambda a, b: a - b)(y, jax.device_put(x, devs[1]))
    with pytest.raises(RuntimeError, match="before backends are initialized"):
        jax.config.update("jax_num_cpu_devices", 2)
    assert jax.config.num_cpu_devices == 4
    mesh = Mesh(np.array(devs[:2]), ("d",))
    s = NamedSharding(mesh, P("d"))
    z = jax.device_put(jnp.arange(8.0).reshape(4, 2), s)
    assert z.sharding == s and z.devices() == set(devs[:2])
    assert [(sh.device, sh.index) for sh in z.addressable_shards] == \
        [(devs[0], (slice(0, 2), slice(None))), (devs[1], (slice(2, 4), slice(None)))]
    np.testing.assert_array_equal(np.asarray(z.addressable_data(1)), [[4, 5], [6, 7]])
    with pytest.raises(ValueError, match="partitioned 2 times"):
        jax.device_put(jnp.arange(3.0), s)
    with pytest.raises(ValueError, match="not found in mesh"):
        NamedSharding(mesh, P("e"))


def test_pmap_results_are_sharded_and_feed_the_next_pmap():
    f = jax.pmap(lambda x: x * 2.0, axis_name="i")
    out = f(jnp.arange(8.0).reshape(4, 2))
    assert repr(out.sharding) == ("NamedSharding(mesh=Mesh('i': 4, axis_types=(Auto,)), "
                                  "spec=P('i',), memory_kind=device)")
    assert out.devices() == set(jax.devices())
    shards = out.addressable_shards
    assert [s.device for s in shards] == jax.devices() and shards[3].data.shape == (1, 2)
    assert not out.is_fully_replicated and jnp.ones(2).is_fully_replicated
    np.testing.assert_array_equal(np.asarray(shards[3].data), [[12.0, 14.0]])
    again = f(out)
    np.testing.assert_array_equal(np.asarray(again), np.arange(8.0).reshape(4, 2) * 4)
    # donated inputs are deleted; the devices= argument picks the devices
    g = jax.pmap(lambda x: x + 1.0, donate_argnums=0, devices=jax.devices()[2:])
    x = jnp.ones((2, 3))
    res = g(x)
    assert x.is_deleted() and res.devices() == set(jax.devices()[2:])
    with pytest.raises(ValueError, match="number of local devices passed to pmap"):
        g(jnp.ones((3, 3)))
    with pytest.raises(ValueError, match="not one of this process's CPU devices"):
        jax.pmap(lambda x: x, devices=[jax.Device("cpu", 7)])(jnp.ones((1, 2)))
    with pytest.raises(NameError, match=r"unbound axis name: j\..*available.*\['i'\]"):
        jax.pmap(lambda x: lax.psum(x, "j"), "i")(jnp.ones((2, 2)))


def test_an_error_on_one_device_reaches_the_caller_without_a_hang():
    def f(x):
        y = lax.psum(x, "i")
        return jax.pure_callback(lambda v: _fail(v), jax.ShapeDtypeStruct((), np.float32), y)

    def _fail(v):
        raise ZeroDivisionError("device failure")
    with pytest.raises(Exception, match="device failure"):
        jax.pmap(f, "i")(jnp.arange(4.0))


def test_device_count_from_the_environment(monkeypatch):
    from corejax.config import _env_num_cpu_devices
    monkeypatch.delenv("COREJAX_NUM_CPU_DEVICES", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_foo=1 --xla_force_host_platform_device_count=3")
    assert _env_num_cpu_devices() == 3
    monkeypatch.setenv("COREJAX_NUM_CPU_DEVICES", "2")
    assert _env_num_cpu_devices() == 2
    monkeypatch.delenv("COREJAX_NUM_CPU_DEVICES")
    monkeypatch.delenv("XLA_FLAGS")
    assert _env_num_cpu_devices() == -1


def test_data_parallel_training_matches_one_device(tmp_path, capsys):
    """train.py with train.devices=2: the same losses and parameters as one device on the
    same global batches, to float32 rounding."""
    import train
    from data import checkpoint, mnist
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    data_dir = os.environ.get("COREJAX_DATA_DIR") or os.path.join(repo, "..", "shared", "data",
                                                                  "mnist")
    if mnist.find_idx_files(data_dir, "train") is None:
        pytest.skip("real MNIST IDX files not found (set COREJAX_DATA_DIR)")
    runs = {}
    for n in (1, 2):
        out = tmp_path / f"dev{n}"
        argv = ["--config", os.path.join(repo, "configs", "mlp.yaml"), "--data-dir", data_dir,
                "--output-dir", str(out), "--quiet"]
        # (test_train.py's TINY settings: the one-device run shares its kernels)
        for item in ["model.args.features=[32]", "data.limit=320", "data.test_limit=300",
                     "train.batch_size=64", "train.eval_batch_size=256", "train.epochs=1",
                     "data.shuffle=true", "output.plot=false", "train.log_every=1",
                     f"train.devices={n}"]:
            argv += ["--set", item]
        assert train.main(argv) == 0
        records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        losses = [r["loss"] for r in records if r["type"] == "step"]
        runs[n] = losses, checkpoint.restore(os.path.join(out, "checkpoint.npz"))
    capsys.readouterr()
    assert len(runs[1][0]) == len(runs[2][0]) == 5
    np.testing.assert_allclose(runs[2][0], runs[1][0], rtol=2e-6)
    one, two = (jax.tree_util.tree_leaves(runs[n][1]["params"]) for n in (1, 2))
    assert len(one) == len(two) > 0
    for a, b in zip(one, two):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)


def test_pmaps_called_from_two_threads_run_in_one_order_on_every_device():
    from concurrent.futures import ThreadPoolExecutor
    f = jax.pmap(lambda x: lax.psum(x, "i") * lax.axis_index("i"), axis_name="i")
    g = jax.pmap(lambda x: lax.all_gather(x, "j").sum(0), axis_name="j",
                 devices=jax.devices()[1:])
    xs = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    with ThreadPoolExecutor(2) as pool:
        outs = [pool.submit(lambda k=k: (f if k % 2 else g)(xs if k % 2 else xs[:3]))
                for k in range(16)]
        got = [np.asarray(o.result(timeout=60)) for o in outs]
    for k, out in enumerate(got):
        want = (xs.sum(0) * np.arange(4)[:, None] if k % 2
                else np.broadcast_to(xs[:3].sum(0), (3, 3)))
        np.testing.assert_allclose(out, want)
