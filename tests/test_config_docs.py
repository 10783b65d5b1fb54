#!/usr/bin/env python3
"""test_config_docs — docs/config.md and the config parser must agree on the keys.

The key tables of docs/config.md are generated from the key table (common/config_keys.c):
each `<!-- pixflow config --reference ARGS -->` ... `<!-- end reference -->` block must be
exactly what `pixflow config --reference ARGS` prints (run this script with --write to
regenerate them; likewise docs/models.md's table of the network types, `<!-- pixflow config
--networks -->`, from the network rows of common/networks.h), and every key of the table
(`pixflow config --keys`) must be documented under its section. Then two directions against
the real parser (`pixflow config`), independent of how the parser is written:
  1. every key the resolved config writes (`pixflow config` of configs/demo.yaml and every
     configs/zoo/*.yaml, so each model type's keys) is documented in docs/config.md, under the
     heading of its section;
  2. every key docs/config.md documents is accepted: the resolved config already holds it, or
     inserted into demo's resolved config (value 1) it draws some error other than
     "unknown key" (a type or range error is fine: the key exists).
Not compared: `optimizers.paramwise_cfg.custom_keys` (user-named). Prints what it checked;
exits 1 on a disagreement.

usage: test_config_docs.py [--write] SOURCE_DIR PIXFLOW_BINARY
"""
import os
import re
import subprocess
import sys
import tempfile

SKIP_UNDER = ("optimizers.paramwise_cfg.custom_keys",)


def documented(md):
    """{full key path} from the tables of docs/config.md, by the heading above each table."""
    keys, prefixes = set(), None
    for line in md.splitlines():
        h = re.match(r"^(#+)\s+(.*)$", line)
        if h:
            text = h.group(2)
            names = re.findall(r"`([^`]+)`", text)
            if "steps" in text or not text or text.startswith("Not supported"):
                prefixes = None             # not a key table (degradation step types, ...)
            elif "(top level)" in text:
                prefixes = [""]
                for n in names:             # "`ema_decay` (top level)": the heading is the key
                    keys.add(n)
            elif names:
                prefixes = names
                keys.update(names)          # a section's heading documents the section
            elif text in ("Hooks",):
                prefixes = None
            else:
                prefixes = None
            continue
        if prefixes is None:
            continue
        row = re.match(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)`\s*\|", line)
        if row:
            for p in prefixes:
                keys.add((p + "." if p else "") + row.group(1))
    return keys


def resolved_paths(yaml_text):
    """Key paths of a resolved config (block mappings; list items and what they hold are
    skipped)."""
    paths, stack = [], []                   # stack of (indent, name)
    skip_indent = None
    for line in yaml_text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if skip_indent is not None:
            if indent > skip_indent or (indent == skip_indent and body.startswith("- ")):
                continue
            skip_indent = None
        if body.startswith("- "):           # a list item: not a key of the mapping
            skip_indent = indent
            continue
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):(\s|$)", body)
        if not m:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([n for _, n in stack] + [m.group(1)])
        paths.append(path)
        stack.append((indent, m.group(1)))
    return paths


def run_config(pixflow, cfg_path, cwd):
    r = subprocess.run([pixflow, "config", cfg_path], cwd=cwd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def make_dirs(cfg_text, cwd):
    """Create the folders and files a config names (relative to cwd), so path checks pass."""
    for m in re.finditer(r"(?:gt|lq)_folder:\s*'?([^'\s#]+)'?", cfg_text):
        if m.group(1) != "null":
            os.makedirs(os.path.join(cwd, m.group(1)), exist_ok=True)
    for m in re.finditer(r"(?:load_from|vgg_weights):\s*'?([^'\s#]+)'?", cfg_text):
        if m.group(1) != "null":          # the GAN recipes' pretrained net_g and VGG19
            f = os.path.join(cwd, m.group(1))
            os.makedirs(os.path.dirname(f), exist_ok=True)
            open(f, "ab").close()


def insert_key(yaml_text, path):
    """The resolved YAML with `path` set to 1, inserted under its section (created at the end
    of its parent when missing). None when the section cannot be found."""
    parts = path.split(".")
    lines = yaml_text.splitlines()
    at, indent = len(lines), 0
    for depth, name in enumerate(parts[:-1]):
        found = None
        for i in range(at if depth else 0, len(lines)):
            ln = lines[i]
            ind = len(ln) - len(ln.lstrip(" "))
            if depth and i > at and ind < indent:
                break
            if ind == indent and re.match(r"^%s:\s*$" % re.escape(name), ln.strip()):
                found = i
                break
        if found is None:                   # add the section under the one above
            lines.insert(at if depth else len(lines), " " * indent + name + ":")
            found = at if depth else len(lines) - 1
        at, indent = found + 1, indent + 2
        if depth < len(parts) - 2:
            at = found
    lines.insert(at, " " * indent + parts[-1] + ": 1")
    return "\n".join(lines) + "\n"


BLOCK = re.compile(r"(<!-- pixflow config (--reference [^>]*?|--networks) -->\n)(.*?)"
                   r"(<!-- end reference -->)", re.S)


def reference(pixflow, args):
    r = subprocess.run([pixflow, "config"] + args.split(), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("test_config_docs: pixflow config %s: %s" % (args, r.stderr.strip()))
    return r.stdout


def check_generated(md, pixflow, write):
    """The generated blocks: (new text, [disagreements], count)."""
    bad, n = [], 0

    def fix(m):
        nonlocal n
        n += 1
        want = reference(pixflow, m.group(2))
        if m.group(3) != want:
            bad.append("the table of `pixflow config %s` differs from the key table"
                       "%s" % (m.group(2), " (rewritten)" if write else
                               " (run tests/test_config_docs.py --write SOURCE PIXFLOW)"))
        return m.group(1) + want + m.group(4)

    return BLOCK.sub(fix, md), bad, n


def table_keys(pixflow):
    """Every key path of the key table, as docs/config.md documents it: data.eval/test keys
    are data.train's, a custom key's item is NAME."""
    r = subprocess.run([pixflow, "config", "--keys"], capture_output=True, text=True, check=True)
    keys = set()
    for k in r.stdout.split():
        k = re.sub(r"^data\.(eval|test)\.", "data.train.", k)
        keys.add(k.replace(".*.", ".NAME."))
    return keys


def main():
    write = len(sys.argv) > 1 and sys.argv[1] == "--write"
    if write:
        del sys.argv[1]
    src, pixflow = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    md_path = os.path.join(src, "docs", "config.md")
    md = open(md_path, encoding="utf-8").read()
    md, bad, n_blocks = check_generated(md, pixflow, write)
    models_path = os.path.join(src, "docs", "models.md")
    models = open(models_path, encoding="utf-8").read()
    models, bad_models, n_models = check_generated(models, pixflow, write)
    if n_models != 1:
        bad_models.append("docs/models.md: %d `pixflow config --networks` tables, want 1"
                          % n_models)
    bad += bad_models
    n_blocks += n_models
    if write:
        with open(md_path, "w", encoding="utf-8") as f:
            f.write(md)
        with open(models_path, "w", encoding="utf-8") as f:
            f.write(models)
        bad = []
    docs = documented(md)
    in_table = table_keys(pixflow)
    for k in sorted(in_table - docs):
        bad.append("%s: a key of the table, not documented in docs/config.md" % k)
    configs = [os.path.join(src, "configs", "demo.yaml")]
    zoo = os.path.join(src, "configs", "zoo")
    if os.path.isdir(zoo):
        configs += sorted(os.path.join(zoo, f) for f in os.listdir(zoo) if f.endswith(".yaml"))
    written = set()
    with tempfile.TemporaryDirectory(prefix="pixflow-config-docs.") as tmp:
        demo_resolved = None
        for cfg in configs:
            make_dirs(open(cfg, encoding="utf-8").read(), tmp)
            rc, out, err = run_config(pixflow, cfg, tmp)
            if rc != 0:
                bad.append("%s: pixflow config failed: %s" % (cfg, err.strip()))
                continue
            if demo_resolved is None:
                demo_resolved = out
            written.update(resolved_paths(out))
        for p in sorted(written):
            if p.startswith(SKIP_UNDER):
                continue
            if p not in docs:
                bad.append("%s: written by the resolved config, not documented in "
                           "docs/config.md" % p)
        probed = 0
        for p in sorted(docs - written):
            if p.startswith(SKIP_UNDER) or demo_resolved is None:
                continue
            text = insert_key(demo_resolved, p)
            path = os.path.join(tmp, "probe.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            rc, out, err = run_config(pixflow, path, tmp)
            probed += 1
            if "unknown key" in err and (": %s: unknown key" % p) in err:
                bad.append("%s: documented in docs/config.md, but the parser says: %s"
                           % (p, err.strip()))
    for b in bad:
        print("test_config_docs: " + b, file=sys.stderr)
    print("test_config_docs: %d generated tables compared; %d keys in the table, %d documented "
          "keys, %d written by %d resolved configs, %d probed by insertion; %d disagreements"
          % (n_blocks, len(in_table), len(docs), len(written), len(configs), probed, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
