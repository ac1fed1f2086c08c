"""Harness-state augmentation (HSA): turn one harness folder into many valid variants.

A variant is a copy of the base folder edited by a seeded composition of small operators
(rename tools and skills, paraphrase descriptions, reorder, add distractors, drop a
non-essential skill, change rule values, persona and style), then validated by `load_harness`.
Two families draw from disjoint pools: `train` for training data, `heldout` for evaluating on
harness states the model never saw. Same base + family + seed -> byte-identical folder.
"""

from __future__ import annotations

import ast
import json
import random
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from hatkit.harness import Harness, load_harness, resolve_harness_path
from hatkit.harness.harness import system_template
from hatkit.harness.hashing import content_hash, harness_files

DISTRACTOR_TOOLS_FILE = "distractors.py"
"""Where a variant gets the distractor tools: tools/distractors.py."""

Number = int | float


def _tool_functions(source: str) -> list[str]:
    """Names of the @tool functions in a Python source, in definition order (no import)."""
    def is_tool(d: ast.expr) -> bool:
        d = d.func if isinstance(d, ast.Call) else d
        return getattr(d, "id", None) == "tool" or getattr(d, "attr", None) == "tool"
    return [n.name for n in ast.parse(source).body
            if isinstance(n, ast.FunctionDef) and any(map(is_tool, n.decorator_list))]


@dataclass(frozen=True)
class FamilySettings:
    """Pools, probabilities and ranges of one augmentation family. Pools are keyed by original
    tool function / skill folder names; a key missing from a pool gets opaque names."""

    name: str  # 'train' or 'heldout'; part of every variant's name
    tool_names: Mapping[str, tuple[str, ...]]  # function -> visible synonyms (find_items, ...)
    opaque_tool_prefix: str  # opaque tool names are <prefix><letter><number>, e.g. tool_a7
    skill_names: Mapping[str, tuple[str, ...]]  # skill folder -> new folder names
    opaque_skill_prefix: str
    tool_descriptions: Mapping[str, tuple[str, ...]]  # function -> tool_overrides descriptions
    skill_descriptions: Mapping[str, tuple[Mapping[str, str], ...]]  # skill -> ({locale: text})
    host_names: tuple[str, ...]
    style_notes: tuple[Mapping[str, str], ...]  # {locale: sentence} for the style_note rule
    rule_values: Mapping[str, tuple[Number, ...]]  # rule -> values (rules the base has)
    tool_naming: Mapping[str, float] = field(default_factory=lambda: MappingProxyType(
        {"synonym": 0.5, "opaque": 0.2, "mixed": 0.3}))  # per-variant mode -> weight
    p_opaque_skill: float = 0.15  # per skill: opaque name (skill_k3) instead of a synonym
    p_distractors: float = 0.8  # tools/distractors.py and distractor skills
    distractor_tools_enabled: tuple[int, int] = (1, 4)  # how many enabled (the rest: disabled)
    distractor_skills_added: tuple[int, int] = (1, 2)
    droppable_skills: tuple[str, ...] = ()  # skills a variant may lose (none a tool needs)
    p_drop_skill: float = 0.3  # drop one of droppable_skills
    p_rule_change: float = 0.75  # per rule in rule_values
    p_style_note: float = 0.5
    distractor_tools_source: Path | None = None  # a tools file of plausible, unneeded tools
    distractor_skills: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    answer_list: tuple[str, ...] = ()  # headings of the list a style note is appended to
    persona_rule: str = "host_name"  # the rule holding the persona's name (host_names replace it)
    rules_valid: Callable[[Mapping[str, Any]], bool] = field(default=lambda rules: True)
    """Whether rule values are consistent (the domain's own constraints, e.g. fees > 0)."""

    @property
    def distractor_tools(self) -> tuple[str, ...]:
        src = self.distractor_tools_source
        return tuple(_tool_functions(src.read_text("utf-8"))) if src is not None else ()


@dataclass(frozen=True)
class HsaData:
    """A domain's augmentation data: a folder with names.yaml, paraphrases.yaml, rules.yaml
    (per family: tool/skill synonyms, descriptions, host names, style notes, rule value pools),
    distractor_skills.yaml, distractor_tools.py.txt and settings.yaml (droppable_skills,
    answer_list, and per-family overrides such as `heldout: {p_rule_change: 1.0}`), plus the
    domain's check that rule values are consistent."""

    folder: Path
    rules_valid: Callable[[Mapping[str, Any]], bool] = field(default=lambda rules: True)

    def _yaml(self, name: str) -> Any:
        path = self.folder / name
        return yaml.safe_load(path.read_text("utf-8")) if path.is_file() else None

    @cached_property
    def families(self) -> Mapping[str, FamilySettings]:
        names, para = self._yaml("names.yaml"), self._yaml("paraphrases.yaml")
        rules = self._yaml("rules.yaml")
        settings = self._yaml("settings.yaml") or {}
        skills = MappingProxyType(self._yaml("distractor_skills.yaml") or {})
        tools = self.folder / "distractor_tools.py.txt"
        ro = MappingProxyType
        out = {}
        for name in names:
            n, p = names[name], para[name]
            out[name] = FamilySettings(
                name=name, tool_names=ro({k: tuple(v) for k, v in n["tools"].items()}),
                opaque_tool_prefix=n["opaque_tool_prefix"], opaque_skill_prefix=n["opaque_skill_prefix"],
                skill_names=ro({k: tuple(v) for k, v in n["skills"].items()}),
                tool_descriptions=ro({k: tuple(v) for k, v in p["tools"].items()}),
                skill_descriptions=ro({k: tuple(ro(a) for a in v) for k, v in p["skills"].items()}),
                host_names=tuple(n["hosts"]), style_notes=tuple(ro(s) for s in p["style_notes"]),
                rule_values=ro({k: tuple(v) for k, v in (rules or {}).get(name, {}).items()}),
                droppable_skills=tuple(settings.get("droppable_skills", ())),
                distractor_tools_source=tools if tools.is_file() else None, distractor_skills=skills,
                answer_list=tuple(settings.get("answer_list", ())), rules_valid=self.rules_valid,
                persona_rule=str(settings.get("persona_rule", "host_name")),
                **dict((settings.get("families") or {}).get(name) or {}))
        return ro(out)

    def family(self, name: str) -> FamilySettings:
        if name not in self.families:
            raise ValueError(f"unknown family '{name}' (known: {', '.join(self.families)})")
        return self.families[name]


@dataclass
class _Work:
    """A variant folder being edited. harness.yaml is edited in `spec` and written at the end;
    tools and skills are tracked by their keys (original function / folder names)."""

    root: Path
    spec: dict[str, Any]  # harness.yaml as data
    fam: FamilySettings
    functions: list[str]  # every @tool function in tools/
    enabled_tools: list[str]  # function names
    descriptions: dict[str, str]  # function -> tool_overrides description
    skills: dict[str, str]  # key -> current folder name
    enabled_skills: list[str]  # keys
    tool_names: dict[str, str] = field(default_factory=dict)  # function -> visible name
    locale: str = "en"
    locales: list[str] = field(default_factory=list)

    @property
    def rules(self) -> dict[str, Any]:
        return self.spec.setdefault("rules", {})  # type: ignore[no-any-return]

    def skill_files(self, key: str) -> list[tuple[str, Path]]:
        """(locale, path) of each SKILL.md / SKILL.<locale>.md of a skill."""
        paths = sorted((self.root / "skills" / self.skills[key]).glob("SKILL*.md"))
        return [(self.locale if p.name == "SKILL.md" else p.name[6:-3], p) for p in paths]


def _start(root: Path, fam: FamilySettings) -> _Work:
    spec: dict[str, Any] = yaml.safe_load((root / "harness.yaml").read_text("utf-8")) or {}
    functions = [fn for p in sorted((root / "tools").glob("*.py"))
                 for fn in _tool_functions(p.read_text("utf-8"))]
    overrides: dict[str, Any] = spec.get("tool_overrides") or {}
    to_fn = {o["name"]: fn for fn, o in overrides.items() if o and o.get("name")}
    if to_fn:  # hooks may name the base's visible names, which are about to change
        _hooks_to_functions(root, to_fn)
    enabled = spec.setdefault("enabled", {})
    folder = root / "skills"
    skills = sorted(d.name for d in folder.iterdir()
                    if d.is_dir() and not d.name.startswith((".", "_"))) if folder.is_dir() else []
    locale = str(spec.get("locale", "en"))
    return _Work(root, spec, fam, functions, [to_fn.get(n, n) for n in enabled.get("tools", [])],
                 {fn: o["description"] for fn, o in overrides.items() if o and o.get("description")},
                 {s: s for s in skills}, list(enabled.get("skills", [])), locale=locale,
                 locales=[str(x) for x in spec.get("locales", [locale])])


def _hooks_to_functions(root: Path, to_fn: Mapping[str, str]) -> None:
    for path in sorted((root / "hooks").glob("*.y*ml")):
        data = yaml.safe_load(path.read_text("utf-8")) or {}
        rules = data.get("rules") or []
        if any(n in to_fn for r in rules for n in r.get("tools", [])):
            for r in rules:
                if "tools" in r:
                    r["tools"] = [to_fn.get(n, n) for n in r["tools"]]
            path.write_text(_dump(data), "utf-8")


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=4096)


def _edit_front_matter(path: Path, **values: str) -> None:
    lines = path.read_text("utf-8").lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    front = yaml.safe_load("\n".join(lines[1:end])) or {}
    front.update(values)
    path.write_text("---\n" + _dump(front) + "\n".join(lines[end:]), "utf-8")


def _opaque(rng: random.Random, prefix: str, taken: set[str]) -> str:
    while (name := f"{prefix}{rng.choice('abcdefghjkmnpqrstuvwxyz')}{rng.randrange(100)}") in taken:
        pass
    return name


def _sample(rng: random.Random, items: list[str], bounds: tuple[int, int]) -> list[str]:
    return rng.sample(items, min(len(items), rng.randint(*bounds)))


# ---- operators: each edits the folder (and the spec) and returns its parameters, or None ----
Operator = Callable[[_Work, random.Random], dict[str, Any] | None]


def add_distractors(w: _Work, rng: random.Random) -> dict[str, Any] | None:
    """tools/distractors.py (some of its tools enabled) and 1-2 distractor skills."""
    target = w.root / "tools" / DISTRACTOR_TOOLS_FILE
    source, names = w.fam.distractor_tools_source, w.fam.distractor_tools
    if (source is None or rng.random() >= w.fam.p_distractors or target.exists()
            or set(names) & set(w.functions)):
        return None
    target.parent.mkdir(exist_ok=True)
    shutil.copyfile(source, target)
    w.functions += names
    tools = _sample(rng, list(names), w.fam.distractor_tools_enabled)
    w.enabled_tools += tools
    skills = _sample(rng, [k for k in w.fam.distractor_skills if k not in w.skills],
                     w.fam.distractor_skills_added)
    for key in skills:
        d, folder = w.fam.distractor_skills[key], w.root / "skills" / key
        folder.mkdir(parents=True)
        for loc in w.locales:  # SKILL.md in the default locale (else English), translations
            lang = loc if loc in d["body"] or loc != w.locale else "en"
            if lang in d["body"]:
                front = _dump({"name": key, "description": d["description"][lang]})
                (folder / ("SKILL.md" if loc == w.locale else f"SKILL.{loc}.md")).write_text(
                    f"---\n{front}---\n{d['body'][lang]}", "utf-8")
        w.skills[key] = key
        w.enabled_skills.append(key)
    return {"tools": tools, "skills": skills}


def drop_skill(w: _Work, rng: random.Random) -> dict[str, Any] | None:
    """Remove one non-essential skill (folder and enabled entry)."""
    options = [k for k in w.fam.droppable_skills if k in w.skills]
    if not options or rng.random() >= w.fam.p_drop_skill:
        return None
    key = rng.choice(options)
    shutil.rmtree(w.root / "skills" / w.skills.pop(key))
    w.enabled_skills = [k for k in w.enabled_skills if k != key]
    return {"skill": key}


def rename_tools(w: _Work, rng: random.Random) -> dict[str, Any]:
    """A new visible name for every @tool, through harness.yaml tool_overrides."""
    modes = list(w.fam.tool_naming)
    mode = rng.choices(modes, weights=[w.fam.tool_naming[m] for m in modes])[0]
    taken: set[str] = set()
    for fn in w.functions:
        pool = [n for n in w.fam.tool_names.get(fn, ()) if n not in taken]
        synonym = pool and (mode == "synonym" or (mode == "mixed" and rng.random() < 0.5))
        name = rng.choice(pool) if synonym else _opaque(rng, w.fam.opaque_tool_prefix, taken)
        w.tool_names[fn] = name
        taken.add(name)
    return {"mode": mode, "names": dict(w.tool_names)}


def rename_skills(w: _Work, rng: random.Random) -> dict[str, Any]:
    """New folder and front-matter names for every skill (translations follow)."""
    taken: set[str] = set()
    new: dict[str, str] = {}
    for key in w.skills:
        pool = [n for n in w.fam.skill_names.get(key, ()) if n not in taken]
        opaque = not pool or rng.random() < w.fam.p_opaque_skill
        new[key] = _opaque(rng, w.fam.opaque_skill_prefix, taken) if opaque else rng.choice(pool)
        taken.add(new[key])
    folder = w.root / "skills"
    for i, key in enumerate(w.skills):  # two steps, so a new name may be an old one
        (folder / w.skills[key]).rename(folder / f"_hsa_{i}")
    for i, key in enumerate(w.skills):
        (folder / f"_hsa_{i}").rename(folder / new[key])
        w.skills[key] = new[key]
        for _, path in w.skill_files(key):
            _edit_front_matter(path, name=new[key])
    return {"names": dict(new)}


def paraphrase(w: _Work, rng: random.Random) -> dict[str, Any]:
    """Tool descriptions (tool_overrides) and skill descriptions (front matter) from the banks."""
    tools = {fn: rng.randrange(len(bank)) for fn in w.functions
             if (bank := w.fam.tool_descriptions.get(fn))}
    w.descriptions.update({fn: w.fam.tool_descriptions[fn][i] for fn, i in tools.items()})
    skills = {}
    for key in w.skills:
        alts = w.fam.skill_descriptions.get(key)
        if alts:
            skills[key] = i = rng.randrange(len(alts))
            for loc, path in w.skill_files(key):
                if loc in alts[i]:
                    _edit_front_matter(path, description=alts[i][loc])
    return {"tools": tools, "skills": skills}


def change_rules(w: _Work, rng: random.Random) -> dict[str, Any] | None:
    """Business-rule values from the family's pools, kept consistent (fees > 0, windows >= 7)."""
    for _ in range(50):
        changed = {k: rng.choice(v) for k, v in w.fam.rule_values.items()
                   if k in w.rules and rng.random() < w.fam.p_rule_change}
        if w.fam.rules_valid({**w.rules, **changed}):
            w.rules.update(changed)
            return changed or None
    return None


def _insert_bullet(path: Path, bullet: str, headings: tuple[str, ...]) -> None:
    """Add `bullet` at the end of the list under one of `headings` (else the first list, else
    line 2)."""
    lines = path.read_text("utf-8").split("\n")
    head = next((i for i, s in enumerate(lines) if headings and s.startswith(headings)), None)
    if head is None:
        head = next((i - 1 for i, s in enumerate(lines) if s.startswith("- ")), 0)
    at = head + 1
    while at < len(lines) and lines[at].startswith("- "):
        at += 1
    lines.insert(at, bullet)
    path.write_text("\n".join(lines), "utf-8")


def persona_and_style(w: _Work, rng: random.Random) -> dict[str, Any] | None:
    """The persona's name (the `persona_rule`) from the pool; maybe a style_note rule, listed in
    every system prompt."""
    out: dict[str, Any] = {}
    if w.fam.persona_rule in w.rules and w.fam.host_names:
        w.rules[w.fam.persona_rule] = out["host_name"] = rng.choice(w.fam.host_names)
    if w.fam.style_notes and "style_note" not in w.rules and rng.random() < w.fam.p_style_note:
        note = rng.choice(w.fam.style_notes)
        for loc in w.locales:
            var = "style_note" if loc == w.locale else f"style_note_{loc.lower().replace('-', '_')}"
            w.rules[var] = note.get(loc, note.get("en", next(iter(note.values()))))
            prompt = w.root / "prompts" / system_template(loc, w.locale)
            if prompt.is_file():
                _insert_bullet(prompt, f"- {{{{ {var} }}}}", w.fam.answer_list)
        out["style_note"] = dict(note)
    return out or None


def reorder(w: _Work, rng: random.Random) -> dict[str, Any]:
    """Shuffle enabled.skills and enabled.tools."""
    rng.shuffle(w.enabled_skills)
    rng.shuffle(w.enabled_tools)
    return {"skills": list(w.enabled_skills), "tools": list(w.enabled_tools)}


OPERATORS: tuple[tuple[str, Operator], ...] = (
    ("distractors", add_distractors), ("drop_skill", drop_skill), ("rename_tools", rename_tools),
    ("rename_skills", rename_skills), ("paraphrase", paraphrase), ("rules", change_rules),
    ("persona", persona_and_style), ("reorder", reorder),
)
"""Applied in this order; each draws from its own RNG stream (family, seed, operator name)."""


def _finish(w: _Work, name: str, base: str, seed: int) -> None:
    w.spec["name"] = name
    w.spec["enabled"]["skills"] = [w.skills[k] for k in w.enabled_skills]
    w.spec["enabled"]["tools"] = [w.tool_names.get(fn, fn) for fn in w.enabled_tools]
    w.spec["tool_overrides"] = {fn: {"name": w.tool_names[fn], **(
        {"description": w.descriptions[fn]} if fn in w.descriptions else {})} for fn in w.functions}
    header = f"# HSA variant of '{base}' ({w.fam.name} family, seed {seed}). Edit the base, not this.\n"
    (w.root / "harness.yaml").write_text(header + _dump(w.spec), "utf-8")


def family_settings(family: FamilySettings | str, hsa: HsaData | None = None) -> FamilySettings:
    """`family` as settings: a name is looked up in `hsa` (the domain's augmentation data)."""
    if isinstance(family, FamilySettings):
        return family
    if hsa is None:
        raise ValueError(f"family '{family}' given by name: pass the domain's HsaData (hsa=...)")
    return hsa.family(family)


def variant_name(base_name: str, family: FamilySettings | str, seed: int) -> str:
    """e.g. live_commerce__train_7 (a negative seed is written m7)."""
    name = family if isinstance(family, str) else family.name
    return f"{base_name}__{name}_{seed if seed >= 0 else f'm{-seed}'}"


def provenance_path(dest: Path) -> Path:
    """Where make_variant records what it did: next to the folder, outside the hash."""
    return dest.parent / f"{dest.name}.provenance.json"


def make_variant(base: Path | str, dest: Path, *, family: FamilySettings | str, seed: int,
                 hsa: HsaData | None = None) -> Harness:
    """Copy `base` to `dest` (which must not exist), augment it, validate it and return it.

    Also writes `provenance_path(dest)`: family, seed, every operator applied with its
    parameters, and the visible -> original name maps of tools and skills.
    """
    fam, src, dest = family_settings(family, hsa), resolve_harness_path(base), Path(dest)
    if dest.exists():
        raise FileExistsError(f"{dest} exists; a variant needs a new folder")
    try:
        for path in harness_files(src):
            (dest / path.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest / path.relative_to(src))
        w = _start(dest, fam)
        base_name = str(w.spec.get("name", "harness"))
        applied = []
        for op_name, op in OPERATORS:
            params = op(w, random.Random(f"hsa:{fam.name}:{seed}:{op_name}"))
            if params is not None:
                applied.append({"operator": op_name, "params": params})
        _finish(w, variant_name(base_name, fam, seed), base_name, seed)
        harness = load_harness(dest)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    base_rules = dict((yaml.safe_load((src / "harness.yaml").read_text("utf-8")) or {}).get("rules") or {})
    record = {"base": base_name, "base_hash": content_hash(src), "base_rules": base_rules,
              "family": fam.name, "seed": seed,
              "name": harness.name, "content_hash": harness.content_hash, "operators": applied,
              "tools": canonical_tool_names(harness), "skills": {v: k for k, v in w.skills.items()}}
    provenance_path(dest).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return harness


def make_variants(base: Path | str, out_dir: Path, *, family: FamilySettings | str,
                  seeds: Iterable[int], hsa: HsaData | None = None) -> list[Harness]:
    """One variant per seed, in out_dir/<variant name>/ (e.g. live_commerce__heldout_3)."""
    src = resolve_harness_path(base)
    base_name = str((yaml.safe_load((src / "harness.yaml").read_text("utf-8")) or {}).get("name"))
    fam = family_settings(family, hsa)
    return [make_variant(src, Path(out_dir) / variant_name(base_name, fam, s), family=fam, seed=s)
            for s in seeds]


def canonical_tool_names(h: Harness) -> dict[str, str]:
    """Visible tool name -> function (canonical) name, for every tool of the harness."""
    return {name: t.canonical for name, t in h.tools.items()}


def base_rules(h: Harness) -> Mapping[str, Any] | None:
    """The rules of the harness a variant was made from (None for a harness that is no
    variant, or a variant recorded before base rules were kept)."""
    try:
        rules = read_provenance(h).get("base_rules")
    except (OSError, ValueError):
        return None
    return dict(rules) if isinstance(rules, dict) else None


def read_provenance(h: Harness | Path) -> dict[str, Any]:
    """The provenance make_variant wrote for a variant (by harness or folder)."""
    root = h.root if isinstance(h, Harness) else Path(h)
    data: dict[str, Any] = json.loads(provenance_path(root).read_text("utf-8"))
    return data


def variant_folder(base: Harness | Path | str, dest: Path, *, family: FamilySettings | str, seed: int,
                   hsa: HsaData | None = None) -> Harness:
    """The variant of `base` (family, seed) in `dest`: reused when its provenance says it was
    made from this base's current content with this family and seed, else (re)made.

    The one way every stage makes or reuses a variant folder: a folder left by an older base
    (the base was edited since) or by other settings is replaced, never silently reused."""
    src = base.root if isinstance(base, Harness) else resolve_harness_path(base)
    fam, dest = family_settings(family, hsa), Path(dest)
    if (dest / "harness.yaml").is_file():
        try:
            record = read_provenance(dest)
            if (record.get("base_hash"), record.get("family"), record.get("seed")) == (
                    content_hash(src), fam.name, seed):
                return load_harness(dest)
        except (OSError, ValueError):
            pass
    if dest.exists():
        shutil.rmtree(dest)
    provenance_path(dest).unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    return make_variant(src, dest, family=fam, seed=seed)
