#!/usr/bin/python3
"""K-FAC (trainc compile --optimizer=kfac) against a float64 reference.

Usage: check_kfac.py TRAINC WORKDIR

The zoo's MLP (three Gemm layers with biases) and LeNet (two convolutions
with biases, three Gemm layers; max and average pooling) train 3 steps of
batch 4 from their ONNX initial weights (12 random samples in file order),
with SGD momentum 0.9, weight decay 1e-4, lr 0.05, damping 1e-3, factor
decay 0.95, a KL clip of 1e-5 (it scales at least one step's update) and
inverses every 2 steps (steps 1 and 3 invert, step 2 keeps step 1's). The
reference (here, in NumPy with PyTorch's autograd for the layers' inputs and
output gradients, float64) is the algorithm of docs/reference.md: the
factors A = [X 1]^T [X 1] / N and G = (N / T) D^T D as running averages
from the identity (convolutions as KFC: patches from torch's unfold, T the
output positions), the inverses of A + sqrt(damping) I and G + sqrt(damping)
I, V = G^-1 [dW db] A^-1 and the KL clip over all layers. After 3 steps the
trainer's checkpoint holds the factors, their inverses, the momentum buffers
(the last preconditioned update among them) and the weights: each compared
with float64 (norm-wise 1e-6, or 4x the same algorithm in float32, whose
error is larger); a layer the compiler leaves to plain SGD would miss its
factors. A run of 2 steps, checkpointed and resumed for 2 more, writes the
checkpoint of 4 steps in one go byte for byte (the inverse schedule crosses
the resume). --report-memory shows the factors as their own kind; misuse is
refused.
Prints one line per check and 'N passed, N failed'.
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "pylib"))
sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
from loss_scaling import read_checkpoint  # noqa: E402
from checksuite import suite_main  # noqa: E402

BATCH, STEPS, SAMPLES = 4, 3, 12
HYPER = dict(lr=0.05, momentum=0.9, weight_decay=1e-4, damping=1e-3, stat_decay=0.95,
             kl_clip=1e-5, inverse_every=2)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def layers_of(model):
    return [(name, m) for name, m in model.named_modules()
            if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]


def reference(model, x, labels, dtype):
    """The K-FAC run in `dtype` (torch.float64 or float32): the final
    weights, momentum buffers, factors and inverses by state name, and each
    step's KL factor nu."""
    model = model.to(dtype)
    params = dict(model.named_parameters())
    layers = layers_of(model)
    state = {}
    for name, m in layers:
        k = m.weight[0].numel() + (1 if m.bias is not None else 0)
        state["kfac.a." + name + ".weight"] = torch.eye(k, dtype=dtype)
        state["kfac.g." + name + ".weight"] = torch.eye(m.weight.shape[0], dtype=dtype)
    buffers = {n: torch.zeros_like(p) for n, p in params.items()}
    nus = []
    h = HYPER
    for step in range(1, STEPS + 1):
        xb = torch.tensor(x[(step - 1) * BATCH:step * BATCH], dtype=dtype)
        yb = torch.tensor(labels[(step - 1) * BATCH:step * BATCH])
        inputs, outputs = {}, {}
        hooks = []
        def keep(module, given, output, name):
            inputs[name] = given[0].detach()
            output.retain_grad()
            outputs[name] = output

        for name, m in layers:
            hooks.append(m.register_forward_hook(
                lambda mod, i, o, name=name: keep(mod, i, o, name)))
        model.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        for hook in hooks:
            hook.remove()
        n = xb.shape[0]
        precond = {}
        vg = 0.0
        for name, m in layers:
            a, dy = inputs[name], outputs[name].grad
            if isinstance(m, torch.nn.Conv2d):
                patches = F.unfold(a, m.kernel_size, dilation=m.dilation, padding=m.padding,
                                   stride=m.stride)  # [N, K, L]
                rows = patches.transpose(1, 2).reshape(-1, patches.shape[1])
                grads = dy.permute(0, 2, 3, 1).reshape(-1, dy.shape[1])
            else:
                rows, grads = a, dy
            if m.bias is not None:
                rows = torch.cat([rows, torch.ones(rows.shape[0], 1, dtype=dtype)], 1)
            r = rows.shape[0]
            a_batch = rows.T @ rows / n
            g_batch = grads.T @ grads * (n * n / r)
            keys = ["kfac.a." + name + ".weight", "kfac.g." + name + ".weight"]
            for key, batch in zip(keys, (a_batch, g_batch)):
                state[key] = h["stat_decay"] * state[key] + (1 - h["stat_decay"]) * batch
                if (step - 1) % h["inverse_every"] == 0:
                    eye = torch.eye(batch.shape[0], dtype=dtype)
                    state[key.replace("kfac.a.", "kfac.a_inverse.").replace(
                        "kfac.g.", "kfac.g_inverse.")] = torch.linalg.inv(
                        state[key] + math.sqrt(h["damping"]) * eye)
            full = m.weight.grad.reshape(m.weight.shape[0], -1)
            if m.bias is not None:
                full = torch.cat([full, m.bias.grad.reshape(-1, 1)], 1)
            v = (state["kfac.g_inverse." + name + ".weight"] @ full @
                 state["kfac.a_inverse." + name + ".weight"])
            vg += float((v * full).sum()) * h["lr"] ** 2
            precond[name] = v
        nu = min(1.0, math.sqrt(h["kl_clip"] / vg)) if vg > 0 else 1.0
        nus.append(nu)
        with torch.no_grad():
            for name, m in layers:
                v = precond[name] * nu
                kw = m.weight[0].numel()
                m.weight.grad.copy_(v[:, :kw].reshape(m.weight.shape))
                if m.bias is not None:
                    m.bias.grad.copy_(v[:, kw])
            for pname, p in params.items():
                d = p.grad + h["weight_decay"] * p
                buffers[pname] = h["momentum"] * buffers[pname] + d
                p -= h["lr"] * buffers[pname]
    out = {"param/" + k: v.detach().numpy().astype(np.float64) for k, v in params.items()}
    out.update({"state/momentum." + k: v.detach().numpy().astype(np.float64)
                for k, v in buffers.items()})
    out.update({"state/" + k: v.detach().numpy().astype(np.float64) for k, v in state.items()})
    return out, nus


def export(name, work):
    import make_zoo
    spec = next(s for s in make_zoo.TORCH_MODELS if s["name"] == name)
    torch.manual_seed(0)
    model = spec["build"]()
    shape = tuple(spec["inputs"]["x"]().shape[1:])
    path = os.path.join(work, name + ".onnx")
    torch.onnx.export(model, torch.zeros((2,) + shape), path, input_names=["x"],
                      output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, do_constant_folding=True)
    rng = np.random.RandomState(4)
    x = rng.randn(SAMPLES, *shape).astype(np.float32)
    labels = rng.randint(0, 10, SAMPLES).astype(np.int64)
    data = os.path.join(work, name + "-data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "label.npy"), labels)
    return model, path, data, x, labels


def trainer_flags(data):
    h = HYPER
    return ["--data", data, "--no-shuffle", "--threads", "1", "--lr", str(h["lr"]),
            "--momentum", str(h["momentum"]), "--weight-decay", str(h["weight_decay"]),
            "--kfac-damping", str(h["damping"]), "--kfac-stat-decay", str(h["stat_decay"]),
            "--kfac-kl-clip", str(h["kl_clip"]), "--kfac-inverse-every",
            str(h["inverse_every"])]


def norm_error(ours, ref):
    return float(np.linalg.norm(ours - ref)) / max(float(np.linalg.norm(ref)), 1e-30)


def check_model(check, trainc, work, name):
    model, path, data, x, labels = export(name, work)
    prog = os.path.join(work, name + "-kfac")
    r = run([trainc, "compile", path, "--target=cpu", "--batch-size=%d" % BATCH,
             "--loss=cross-entropy", "--optimizer=kfac", "--report-memory", "-o", prog])
    if r.returncode != 0:
        check(False, "%s: compile --optimizer=kfac: %s" % (name, r.stderr[-600:]))
        return
    check("K-FAC factors" in r.stdout + r.stderr,
          "%s: --report-memory shows the K-FAC factors as their own kind" % name)
    ck = os.path.join(work, name + "-ck")
    r = run([prog] + trainer_flags(data) + ["--steps", str(STEPS), "--checkpoint-dir", ck])
    if r.returncode != 0:
        check(False, "%s: training 3 steps: %s" % (name, r.stderr[-600:]))
        return
    ours, _ = read_checkpoint(ck)
    ours = {k: np.frombuffer(v, np.float32).astype(np.float64) for k, v in ours.items()}
    import copy
    ref64, nus = reference(copy.deepcopy(model), x, labels, torch.float64)
    ref32, _ = reference(copy.deepcopy(model), x, labels, torch.float32)
    missing = [k for k in ref64 if k not in ours]
    groups = {"factors": "state/kfac.a.", "G factors": "state/kfac.g.",
              "A inverses": "state/kfac.a_inverse.", "G inverses": "state/kfac.g_inverse.",
              "momentum buffers": "state/momentum.", "weights": "param/"}
    worst = []
    ok = not missing
    for what, prefix in groups.items():
        keys = [k for k in ref64 if k.startswith(prefix) and k in ours]
        for k in keys:
            e = norm_error(ours[k], ref64[k].reshape(-1))
            e32 = norm_error(ref32[k].reshape(-1), ref64[k].reshape(-1))
            tol = max(1e-6, 4 * e32)
            worst.append((e / tol, "%s %.2g (float32 %.2g)" % (k, e, e32)))
            ok &= e <= tol
    worst.sort(reverse=True)
    check(ok and any(nu < 1 for nu in nus),
          "%s: after 3 steps the factors, inverses, momentum buffers and weights of %d layers "
          "match float64 K-FAC (KL factors %s); nearest to its tolerance %s%s"
          % (name, len(layers_of(model)), ", ".join("%.3g" % nu for nu in nus),
             worst[0][1] if worst else "-", "; missing " + ", ".join(missing[:4])
             if missing else ""))
    # Resumed across the inverse schedule: 2 steps, then 2 more.
    whole, parts = os.path.join(work, name + "-4"), os.path.join(work, name + "-2+2")
    flags = trainer_flags(data)[:-1] + ["3"]
    a = run([prog] + flags + ["--steps", "4", "--checkpoint-dir", whole])
    b1 = run([prog] + flags + ["--steps", "4", "--until-step", "2", "--checkpoint-dir", parts])
    b2 = run([prog] + flags + ["--steps", "4", "--checkpoint-dir", parts, "--resume"])
    same = all(r.returncode == 0 for r in (a, b1, b2))
    if same:
        with open(os.path.join(whole, "checkpoint.safetensors"), "rb") as f1, \
                open(os.path.join(parts, "checkpoint.safetensors"), "rb") as f2:
            same = f1.read() == f2.read()
    check(same, "%s: 2 steps, checkpointed and resumed for 2 more (inverses every 3 steps), "
                "write the 4-step run's checkpoint byte for byte" % name)


def check_refusals(check, trainc, work):
    path = os.path.join(work, "mlp.onnx")
    base = [trainc, "compile", path, "--target=cpu", "--batch-size=4", "--loss=cross-entropy",
            "--optimizer=kfac", "-o", os.path.join(work, "refused")]
    for extra, expected in ((["--precision=bf16"], "computes its factors in f32"),
                            (["--grad-accum=2"], "--grad-accum is not for it yet"),
                            (["--data-parallel"], "--data-parallel would need them summed"),
                            (["--clip-grad-norm=1"], "clips its updates by KL divergence")):
        r = run(base + extra)
        check(r.returncode != 0 and expected in r.stderr,
              "refused: --optimizer=kfac with %s" % " ".join(extra))
    sgd = os.path.join(work, "mlp-sgd")
    run([trainc, "compile", path, "--target=cpu", "--batch-size=4", "--loss=cross-entropy",
         "--optimizer=sgd", "-o", sgd])
    r = run([sgd, "--data", os.path.join(work, "mlp-data"), "--steps", "1", "--kfac-damping",
             "0.01"])
    check(r.returncode == 1 and "--kfac-damping" in r.stderr and "kfac" in r.stderr,
          "refused: --kfac-damping for an SGD trainer")


def checks(check, trainc, work):
    torch.set_num_threads(1)
    for name in ("mlp", "lenet"):
        check_model(check, trainc, work, name)
    check_refusals(check, trainc, work)


if __name__ == "__main__":
    sys.exit(suite_main(checks))
