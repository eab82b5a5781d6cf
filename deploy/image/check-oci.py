#!/usr/bin/env python3
"""deploy/image/check-oci.py ARCHIVE: checks an OCI image archive (a plain tar,
as deploy/image.sh writes it) with Python's standard library only.

Every descriptor's digest and size (index.json -> manifest -> config and
layers) match their blobs; each layer's uncompressed sha256 is the config's
rootfs.diff_ids entry; the layer holds relative names only, no device,
socket or FIFO, and /opt/tailsweep/bin/tailsweep; the config says amd64,
linux, PATH and PYTHONPATH; Docker's manifest.json, when there, names the
same config and layers. Prints a summary; exits 1 on the first failure.
"""
import gzip
import hashlib
import json
import sys
import tarfile

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"


class Bad(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Bad(what)


def blob_path(digest):
    algo, _, hexd = digest.partition(":")
    need(algo == "sha256" and len(hexd) == 64, f"digest {digest!r} is not sha256:<64 hex>")
    return f"blobs/sha256/{hexd}"


def main(path):
    with tarfile.open(path, "r:") as tar:  # plain tar, not compressed
        members = {(m.name[2:] if m.name.startswith("./") else m.name): m for m in tar.getmembers()}

        def read(name):
            need(name in members and members[name].isfile(), f"{name} missing from the archive")
            return tar.extractfile(members[name]).read()

        def check_blob(desc, what):
            need(isinstance(desc.get("size"), int), f"{what}: no size")
            name = blob_path(desc["digest"])
            need(name in members, f"{what}: blob {name} missing")
            h = hashlib.sha256()
            f = tar.extractfile(members[name])
            size = 0
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
            need("sha256:" + h.hexdigest() == desc["digest"], f"{what}: digest {desc['digest']} != blob's sha256:{h.hexdigest()}")
            need(size == desc["size"], f"{what}: size {desc['size']} != blob's {size}")
            print(f"ok  {what}: {desc['digest']} ({size} bytes)")
            return name

        layout = json.loads(read("oci-layout"))
        need(layout.get("imageLayoutVersion") == "1.0.0", "oci-layout: imageLayoutVersion is not 1.0.0")
        index = json.loads(read("index.json"))
        need(index.get("schemaVersion") == 2, "index.json: schemaVersion is not 2")
        need(len(index.get("manifests", [])) >= 1, "index.json: no manifests")
        for mdesc in index["manifests"]:
            ref = mdesc.get("annotations", {}).get("org.opencontainers.image.ref.name", "")
            need(mdesc.get("mediaType") == OCI_MANIFEST, f"index.json: manifest mediaType {mdesc.get('mediaType')}")
            check_blob(mdesc, f"manifest {ref}")
            manifest = json.loads(read(blob_path(mdesc["digest"])))
            need(manifest.get("schemaVersion") == 2, "manifest: schemaVersion is not 2")
            need(manifest.get("mediaType") == OCI_MANIFEST, "manifest: mediaType")
            cdesc = manifest["config"]
            need(cdesc.get("mediaType") == OCI_CONFIG, "manifest: config mediaType")
            check_blob(cdesc, "config")
            config = json.loads(read(blob_path(cdesc["digest"])))
            need(config.get("architecture") == "amd64", "config: architecture is not amd64")
            need(config.get("os") == "linux", "config: os is not linux")
            env = dict(e.split("=", 1) for e in config.get("config", {}).get("Env", []))
            need("/opt/tailsweep/bin" in env.get("PATH", "").split(":"), "config: PATH lacks /opt/tailsweep/bin")
            need(env.get("PYTHONPATH") == "/opt/tailsweep/python", "config: PYTHONPATH is not /opt/tailsweep/python")
            need(config.get("rootfs", {}).get("type") == "layers", "config: rootfs.type is not layers")
            diff_ids = config["rootfs"].get("diff_ids", [])
            layers = manifest.get("layers", [])
            need(len(diff_ids) == len(layers) >= 1, f"{len(layers)} layers but {len(diff_ids)} diff_ids")
            need(len(config.get("history", [])) >= 1, "config: no history")
            for i, (ldesc, diff_id) in enumerate(zip(layers, diff_ids)):
                need(ldesc.get("mediaType") == OCI_LAYER_GZIP, f"layer {i}: mediaType {ldesc.get('mediaType')}")
                name = check_blob(ldesc, f"layer {i}")
                # The uncompressed stream: its sha256 is the diff_id; and
                # what it holds, read as it streams by.
                raw = gzip.GzipFile(fileobj=tar.extractfile(members[name]))
                h = hashlib.sha256()

                class Tee:
                    def read(self, n=-1):
                        b = raw.read(n)
                        h.update(b)
                        return b

                count, kinds, names = 0, {}, set()
                with tarfile.open(fileobj=Tee(), mode="r|") as layer:
                    for m in layer:
                        count += 1
                        need(not m.name.startswith("/") and ".." not in m.name.split("/"), f"layer {i}: name {m.name!r} not relative")
                        need(not (m.ischr() or m.isblk() or m.isfifo()), f"layer {i}: {m.name} is a device or FIFO")
                        kinds[m.type] = kinds.get(m.type, 0) + 1
                        names.add(m.name)
                while Tee().read(1 << 20):  # the tar's trailing blocks
                    pass
                need("sha256:" + h.hexdigest() == diff_id, f"layer {i}: uncompressed sha256:{h.hexdigest()} != diff_id {diff_id}")
                print(f"ok  layer {i} diff_id: {diff_id} ({count} entries)")
                for must in ("opt/tailsweep/bin/tailsweep", "usr/bin/python3", "opt/tailsweep/python/tailsweep/__init__.py"):
                    need(must in names, f"layer {i}: no {must}")
            print(f"ok  config: {config['architecture']}/{config['os']}, Cmd {config['config'].get('Cmd')},"
                  f" Entrypoint {config['config'].get('Entrypoint')}, WorkingDir {config['config'].get('WorkingDir')}")
            print(f"ok  Env: {config['config']['Env']}")
            print(f"ok  ref.name {ref}")
        if "manifest.json" in members:
            docker = json.loads(read("manifest.json"))
            need(isinstance(docker, list) and len(docker) == len(index["manifests"]), "manifest.json: one entry per image")
            for entry, mdesc in zip(docker, index["manifests"]):
                manifest = json.loads(read(blob_path(mdesc["digest"])))
                need(entry["Config"] == blob_path(manifest["config"]["digest"]), "manifest.json: Config is not the manifest's")
                need(entry["Layers"] == [blob_path(l["digest"]) for l in manifest["layers"]], "manifest.json: Layers are not the manifest's")
                ref = mdesc.get("annotations", {}).get("org.opencontainers.image.ref.name")
                need(ref in entry.get("RepoTags", []), f"manifest.json: RepoTags {entry.get('RepoTags')} lack {ref}")
            print(f"ok  manifest.json (docker load): RepoTags {[t for e in docker for t in e['RepoTags']]}")
    print(f"check-oci: {path}: pass")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 2)
    try:
        main(sys.argv[1])
    except (Bad, KeyError, ValueError, OSError, tarfile.TarError) as e:
        print(f"check-oci: {sys.argv[1]}: FAIL: {e}", file=sys.stderr)
        sys.exit(1)
