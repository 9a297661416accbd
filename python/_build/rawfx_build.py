"""A minimal PEP 517 build backend for the pure-Python rawfx package.

It writes a wheel of rawfx/*.py with its metadata and RECORD, and an sdist of the project,
using only the standard library, so `pip install ./python` works without an index.
"""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib  # Python 3.11+
except ImportError:  # pragma: no cover
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "rawfx"


def _project():
    if tomllib is not None:
        with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
            return tomllib.load(f)["project"]
    # Python < 3.11: the few keys this file needs, read line by line.
    project = {}
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        for line in f:
            if "=" in line and not line.startswith(("#", "[")):
                key, value = (part.strip() for part in line.split("=", 1))
                project[key] = eval(value)  # literals only: strings and lists
    return project


def _metadata():
    project = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"],
             "Summary: " + project["description"], "Requires-Python: " + project["requires-python"]]
    lines += ["Requires-Dist: " + d for d in project.get("dependencies", [])]
    return project, "\n".join(lines) + "\n"


def _files():
    for name in sorted(os.listdir(os.path.join(ROOT, PACKAGE))):
        if name.endswith(".py"):
            yield PACKAGE + "/" + name, os.path.join(ROOT, PACKAGE, name)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project, metadata = _metadata()
    tag = "py3-none-any"
    dist_info = "%s-%s.dist-info" % (project["name"], project["version"])
    wheel_name = "%s-%s-%s.whl" % (project["name"], project["version"], tag)
    entries = [(arcname, open(path, "rb").read()) for arcname, path in _files()]
    entries.append((dist_info + "/METADATA", metadata.encode()))
    entries.append((dist_info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: rawfx_build\nRoot-Is-Purelib: true\nTag: %s\n" % tag).encode()))
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for arcname, data in entries:
            wheel.writestr(arcname, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))
        record.append(dist_info + "/RECORD,,")
        wheel.writestr(dist_info + "/RECORD", "\n".join(record) + "\n")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    project, metadata = _metadata()
    base = "%s-%s" % (project["name"], project["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for relative in ["pyproject.toml", "_build/rawfx_build.py"] + [a for a, _ in _files()]:
            sdist.add(os.path.join(ROOT, relative), base + "/" + relative)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = metadata.encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
