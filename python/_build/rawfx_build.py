"""A minimal PEP 517 build backend for the pure-Python rawfx package.

It writes a wheel of rawfx/*.py with its metadata and RECORD, and an sdist of the project,
using only the standard library, so `pip install ./python` works without an index.

Run as a script it writes the binary wheel scripts/build-wheel.sh ships:
    python3 rawfx_build.py native-wheel NATIVE_DIR OUT_DIR
the same package with NATIVE_DIR (librawfx, the plugins, the helper, the command, the headers
and the libraries they need, laid out like an installation prefix) under rawfx/_native/, tagged
py3-none-linux_x86_64. The package loads rawfx/_native/lib/librawfx.so.1 when no environment
variable names another library.
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


def _native_files(native):
    """(arcname, path, mode) of every file under `native`, as rawfx/_native/...; symlinks are
    refused (a wheel cannot hold them)."""
    for directory, subdirectories, names in os.walk(native):
        subdirectories.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            if os.path.islink(path):
                raise ValueError("%s is a symbolic link; a wheel cannot hold one" % path)
            relative = os.path.relpath(path, native).replace(os.sep, "/")
            yield PACKAGE + "/_native/" + relative, path, os.stat(path).st_mode & 0o777


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None, native=None):
    project, metadata = _metadata()
    tag = "py3-none-linux_x86_64" if native else "py3-none-any"
    dist_info = "%s-%s.dist-info" % (project["name"], project["version"])
    wheel_name = "%s-%s-%s.whl" % (project["name"], project["version"], tag)
    entries = [(arcname, open(path, "rb").read(), 0o644) for arcname, path in _files()]
    if native:
        entries += [(arcname, open(path, "rb").read(), mode) for arcname, path, mode in _native_files(native)]
    entries.append((dist_info + "/METADATA", metadata.encode(), 0o644))
    wheel_file = "Wheel-Version: 1.0\nGenerator: rawfx_build\nRoot-Is-Purelib: %s\nTag: %s\n" % (
        "false" if native else "true", tag)
    entries.append((dist_info + "/WHEEL", wheel_file.encode(), 0o644))
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for arcname, data, mode in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | mode) << 16  # pip keeps the executable bits
            wheel.writestr(info, data)
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


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 4 or sys.argv[1] != "native-wheel":
        sys.exit("usage: rawfx_build.py native-wheel NATIVE_DIR OUT_DIR")
    if not os.path.isfile(os.path.join(sys.argv[2], "lib", "librawfx.so.1")):
        sys.exit("rawfx_build.py: %s/lib/librawfx.so.1 is missing; stage the native files first"
                 " (scripts/build-wheel.sh)" % sys.argv[2])
    os.makedirs(sys.argv[3], exist_ok=True)
    print(os.path.join(sys.argv[3], build_wheel(sys.argv[3], native=sys.argv[2])))
