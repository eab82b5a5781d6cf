#!/usr/bin/env bash
# deploy/image.sh [--release TARBALL] [--out FILE] [--root DIR] [--mirror URL]
#                 [--keep]: the container image, built without a Docker
# daemon (no docker, buildah, umoci or skopeo: debootstrap, tar and gzip).
#
#   1. a Debian 12 root: debootstrap --variant=minbase bookworm, into DIR
#      (--root; reused when it holds a finished debootstrap, and kept) or a
#      temporary folder; then copied, so DIR stays as debootstrap left it
#   2. what the release needs at run time, and nothing to build with:
#      python3 (the standard library), libstdc++6, ca-certificates, procps;
#      with bookworm-updates and -security. No compiler.
#   3. TARBALL (deploy/release.sh makes it; default: the one
#      dist/tailsweep-*-linux-x86_64.tar.gz) at /opt/tailsweep, without its
#      version folder; the lab archive of the same version, when it lies
#      beside TARBALL, unpacked over it
#   4. apt's lists and caches, docs, man pages and locales removed (and kept
#      out of later installs: /etc/dpkg/dpkg.cfg.d/01-tailsweep-nodoc)
#   5. the root as an OCI image archive, a plain tar (default
#      dist/tailsweep-VERSION-oci.tar): oci-layout, index.json (ref.name
#      tailsweep:VERSION), blobs/sha256/ (one gzipped layer, its config, its
#      manifest), and Docker's manifest.json for `docker load` before 25.
#      Env: PATH with /opt/tailsweep/bin, PYTHONPATH=/opt/tailsweep/python;
#      Cmd ["tailsweep"]; WorkingDir /work (mode 1777).
#   6. the archive checked: every digest and size, and the layer's diff_id
#      (deploy/image/check-oci.py, Python's standard library)
#
# Use it:  apptainer build tailsweep.sif oci-archive://dist/tailsweep-VERSION-oci.tar
#          docker load -i dist/tailsweep-VERSION-oci.tar
# Run as root (debootstrap, chroot, mounts). Needs debootstrap, tar, gzip,
# sha256sum (./deploy/install-deps.sh --with release) and, for step 6, python3.
# Temporary folders go under $TMPDIR (default /var/tmp); --keep keeps them.
# SOURCE_DATE_EPOCH, when set, is the image's date and its files' newest.
set -euo pipefail
start=$(date +%s)
src=$(cd "$(dirname "$0")/.." && pwd)
release=""
out=""
root=""
keep=no
mirror=http://deb.debian.org/debian
usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "image.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --release) [ $# -ge 2 ] || die "--release needs the release archive"; release=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a file name"; out=$2; shift 2 ;;
    --root) [ $# -ge 2 ] || die "--root needs a folder"; root=$2; shift 2 ;;
    --mirror) [ $# -ge 2 ] || die "--mirror needs a Debian mirror's URL"; mirror=$2; shift 2 ;;
    --keep) keep=yes; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# --- what to build from ---------------------------------------------------
if [ -z "$release" ]; then
  shopt -s nullglob
  found=("$src"/dist/tailsweep-[0-9]*-linux-x86_64.tar.gz)
  shopt -u nullglob
  [ ${#found[@]} -eq 1 ] || die "give the release archive with --release" \
    "(found ${#found[@]} in $src/dist; deploy/release.sh makes it)"
  release=${found[0]}
fi
[ -f "$release" ] || die "no release archive at '$release' (deploy/release.sh makes it)"
release=$(readlink -f "$release")
top=$(tar -tzf "$release" 2> /dev/null | awk -F/ 'NR == 1 { print $1 }') ||
  die "$release is not a gzipped tar"
case "$top" in
  tailsweep-[0-9]*) ;;
  *) die "$release does not hold one folder tailsweep-VERSION/ (deploy/release.sh makes it)" ;;
esac
full_version=$(tar -xzOf "$release" "$top/share/tailsweep/VERSION" 2> /dev/null) ||
  die "$release has no $top/share/tailsweep/VERSION"
version=${full_version%%+*}
[ "$top" = "tailsweep-$version" ] ||
  die "$release: folder $top but VERSION $full_version"
tag=tailsweep:$version
lab_release=$(dirname "$release")/tailsweep-lab-$version-linux-x86_64.tar.gz
[ -f "$lab_release" ] || lab_release=""
[ -n "$out" ] || out=$src/dist/tailsweep-$version-oci.tar
out_dir=$(dirname "$out")
mkdir -p "$out_dir" || die "cannot make $out_dir"
out=$(cd "$out_dir" && pwd)/$(basename "$out")

[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot and mounts need it)"
for tool in tar gzip sha256sum chroot mount umount findmnt; do
  command -v "$tool" > /dev/null || die "$tool is missing"
done
python=$(command -v python3 || true)
[ -n "$python" ] || echo "image.sh: no python3 here: the archive's check is skipped" >&2

created_epoch=${SOURCE_DATE_EPOCH:-$start}
created=$(date -u -d "@$created_epoch" +%Y-%m-%dT%H:%M:%SZ)

# --- temporary folders, mounts, and their cleanup -------------------------
work=$(mktemp -d "${TMPDIR:-/var/tmp}/tailsweep-image.XXXXXX")
stage=$work/rootfs
mounted=()
unmount_all() {
  local m
  for m in "${mounted[@]}"; do
    umount "$m" 2> /dev/null || umount -l "$m" 2> /dev/null || true
  done
  mounted=()
}
# True while anything is mounted at or under $1 (never rm -rf then).
has_mounts() { findmnt -rn -o TARGET | awk -v p="$1" '$0 == p || index($0, p "/") == 1 { f = 1 } END { exit !f }'; }
cleanup() {
  local rc=$?
  unmount_all
  if [ "$keep" = yes ]; then
    echo "image.sh: kept $work (the image's root: $stage)" >&2
  elif has_mounts "$work"; then
    echo "image.sh: something is still mounted under $work: left it there" >&2
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# --- 1. the Debian root ---------------------------------------------------
finished() { [ -x "$1/usr/bin/apt-get" ] && [ -f "$1/var/lib/dpkg/status" ] && [ ! -e "$1/debootstrap" ]; }
if [ -z "$root" ]; then
  root=$work/debootstrap
fi
if finished "$root"; then
  echo "image.sh: reusing the debootstrap in $root"
else
  if [ -d "$root" ] && [ -n "$(ls -A "$root" 2> /dev/null)" ]; then
    die "$root is neither empty nor a finished debootstrap: remove it or name another --root"
  fi
  command -v debootstrap > /dev/null ||
    die "debootstrap is missing (./deploy/install-deps.sh --with release)"
  echo "image.sh: debootstrap --variant=minbase bookworm $root ($mirror)"
  mkdir -p "$root"
  if ! debootstrap --variant=minbase bookworm "$root" "$mirror" > "$work/debootstrap.log" 2>&1; then
    tail -n 20 "$work/debootstrap.log" >&2
    die "debootstrap failed (the log above; $work/debootstrap.log with --keep)"
  fi
fi
has_mounts "$root" && die "$root has mounts under it: unmount them first"
echo "image.sh: copying the root to $stage"
cp -a "$root" "$stage"

# --- 2. what the release needs at run time --------------------------------
# The host's certificates (a TLS-intercepting proxy's) for apt; taken out
# again before the image is packed.
host_certs=()
if ls /usr/local/share/ca-certificates/*.crt > /dev/null 2>&1; then
  mkdir -p "$stage/usr/local/share/ca-certificates"
  for crt in /usr/local/share/ca-certificates/*.crt; do
    cp "$crt" "$stage/usr/local/share/ca-certificates/host-$(basename "$crt")"
    host_certs+=("$stage/usr/local/share/ca-certificates/host-$(basename "$crt")")
  done
fi
cp /etc/resolv.conf "$stage/etc/resolv.conf"
security=${mirror%/debian}/debian-security
[ "$security" != "$mirror/debian-security" ] || security=http://deb.debian.org/debian-security
cat > "$stage/etc/apt/sources.list" << EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
# Docs, man pages and translations stay out (copyright files stay in).
mkdir -p "$stage/etc/dpkg/dpkg.cfg.d"
cat > "$stage/etc/dpkg/dpkg.cfg.d/01-tailsweep-nodoc" << 'EOF'
# deploy/image.sh: a small image; docs, man pages and translations stay out.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOF
cat > "$stage/etc/apt/apt.conf.d/01-tailsweep-small" << 'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
# No service starts inside the root.
printf '#!/bin/sh\nexit 101\n' > "$stage/usr/sbin/policy-rc.d"
chmod 755 "$stage/usr/sbin/policy-rc.d"

in_root() {
  chroot "$stage" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LC_ALL=C DEBIAN_FRONTEND=noninteractive "$@"
}
# /proc, /sys and /dev only while something runs in the root (apt; the
# programs, whose loader finds $ORIGIN through /proc/self/exe).
mount_all() {
  mount -t proc proc "$stage/proc"
  mounted=("$stage/proc" "${mounted[@]}")
  mount --bind /sys "$stage/sys"
  mounted=("$stage/sys" "${mounted[@]}")
  mount --bind /dev "$stage/dev"
  mounted=("$stage/dev" "${mounted[@]}")
}
mount_all
echo "image.sh: apt-get install python3 libstdc++6 ca-certificates procps (with updates)"
if ! {
  in_root apt-get update -q &&
    in_root apt-get -y -q -o Dpkg::Options::=--force-confold upgrade &&
    in_root apt-get install -y -q --no-install-recommends \
      python3 libstdc++6 ca-certificates procps
} > "$work/apt.log" 2>&1; then
  tail -n 20 "$work/apt.log" >&2
  die "apt-get failed in the root (the log above)"
fi
rm -f "${host_certs[@]}"
in_root update-ca-certificates --fresh > /dev/null 2>&1 ||
  die "update-ca-certificates failed in the root"
in_root apt-get clean
unmount_all
rm -f "$stage/usr/sbin/policy-rc.d"

# --- 3. the release at /opt/tailsweep -------------------------------------
echo "image.sh: $(basename "$release") at /opt/tailsweep"
rm -rf "$stage/opt/tailsweep"
mkdir -p "$stage/opt/tailsweep"
tar -xzf "$release" -C "$stage/opt/tailsweep" --strip-components=1 \
  --no-same-owner --no-same-permissions --delay-directory-restore
if [ -n "$lab_release" ]; then
  echo "image.sh: $(basename "$lab_release") over it"
  tar -xzf "$lab_release" -C "$stage/opt/tailsweep" --strip-components=1 \
    --no-same-owner --no-same-permissions
fi
chown -R 0:0 "$stage/opt/tailsweep"
chmod -R u+rwX,go+rX,go-w "$stage/opt/tailsweep"
install -d -m 1777 "$stage/work"
cat > "$stage/etc/profile.d/tailsweep.sh" << 'EOF'
# deploy/image.sh: tailsweep in login shells too (the image's Env sets both).
case ":$PATH:" in *:/opt/tailsweep/bin:*) ;; *) PATH=/opt/tailsweep/bin:$PATH ;; esac
PYTHONPATH=/opt/tailsweep/python${PYTHONPATH:+:$PYTHONPATH}
export PATH PYTHONPATH
EOF

# --- 4. small, and no trace of this machine -------------------------------
find "$stage/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete 2> /dev/null || true
find "$stage/usr/share/doc" -mindepth 1 -type d -empty -delete 2> /dev/null || true
for d in usr/share/man usr/share/groff usr/share/info usr/share/lintian \
  usr/share/linda usr/share/locale; do
  [ -d "$stage/$d" ] && find "$stage/$d" -mindepth 1 -delete
done
rm -rf "$stage"/var/lib/apt/lists/* "$stage"/var/cache/apt/* \
  "$stage"/var/cache/debconf/*-old "$stage"/var/lib/dpkg/*-old \
  "$stage"/var/log/apt/* "$stage"/tmp/* "$stage"/var/tmp/* "$stage"/root/.cache \
  "$stage"/var/cache/ldconfig/aux-cache
find "$stage/var/log" -type f -delete
: > "$stage/etc/resolv.conf"
echo tailsweep > "$stage/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$stage/etc/hosts"
for tool in gcc g++ cc c++ ld make; do
  [ ! -e "$stage/usr/bin/$tool" ] || die "the root has /usr/bin/$tool: the image must not build"
done
# The programs load: the launcher's checks pass, no library is missing.
mount_all
for exe in "$stage"/opt/tailsweep/libexec/*; do
  missing=$(in_root ldd "/opt/tailsweep/libexec/$(basename "$exe")" 2>&1 | grep 'not found' || true)
  [ -z "$missing" ] || die "in the root, $(basename "$exe") misses: $missing"
done
ts_version=$(in_root /opt/tailsweep/bin/tailsweep --version) ||
  die "/opt/tailsweep/bin/tailsweep --version failed in the root"
in_root env PYTHONPATH=/opt/tailsweep/python python3 -c 'import tailsweep' ||
  die "python3 -c 'import tailsweep' failed in the root"
py_version=$(in_root python3 --version)
unmount_all
root_mb=$(du -sm "$stage" | cut -f1)
echo "image.sh: the root: $root_mb MB; in it: $ts_version, $py_version"

# --- 5. the OCI image archive ---------------------------------------------
oci=$work/oci
blobs=$oci/blobs/sha256
mkdir -p "$blobs"
layer_tar=$work/layer.tar
# Relative names, numeric owners, no device, socket or FIFO, sorted names;
# with SOURCE_DATE_EPOCH, no file newer than it.
clamp=()
[ -z "${SOURCE_DATE_EPOCH:-}" ] || clamp=(--mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime)
(
  cd "$stage"
  find . -mindepth 1 \( -type b -o -type c -o -type s -o -type p \) -prune \
    -o -printf '%P\0' | LC_ALL=C sort -z |
    tar --create --file=- --null --no-recursion --files-from=- \
      --numeric-owner --format=posix \
      --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
      "${clamp[@]}"
) > "$layer_tar"
diff_id=$(sha256sum "$layer_tar" | cut -d' ' -f1)
layer_size_raw=$(stat -c %s "$layer_tar")
gzip -n -6 < "$layer_tar" > "$work/layer.tar.gz"
rm -f "$layer_tar"
layer_digest=$(sha256sum "$work/layer.tar.gz" | cut -d' ' -f1)
layer_size=$(stat -c %s "$work/layer.tar.gz")
mv "$work/layer.tar.gz" "$blobs/$layer_digest"

env_path=/opt/tailsweep/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Hashes, numbers and fixed words only: JSON by hand. `json_string` for the
# version, in case it carries a character JSON escapes.
json_string() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
v=$(json_string "$full_version")
config=$work/config.json
printf '%s' \
  '{"created":"'"$created"'","architecture":"amd64","os":"linux",' \
  '"config":{"Env":["PATH='"$env_path"'","PYTHONPATH=/opt/tailsweep/python","LANG=C.UTF-8"],' \
  '"Cmd":["tailsweep"],"WorkingDir":"/work",' \
  '"Labels":{"org.opencontainers.image.title":"tailsweep","org.opencontainers.image.version":"'"$v"'",' \
  '"org.opencontainers.image.licenses":"Apache-2.0",' \
  '"org.opencontainers.image.description":"tailsweep on Debian 12 (debootstrap --variant=minbase bookworm)"}},' \
  '"rootfs":{"type":"layers","diff_ids":["sha256:'"$diff_id"'"]},' \
  '"history":[{"created":"'"$created"'","created_by":"deploy/image.sh: debootstrap --variant=minbase bookworm; apt-get install python3 libstdc++6 ca-certificates procps; '"$(json_string "$(basename "$release")")"' at /opt/tailsweep",' \
  '"comment":"tailsweep '"$v"'"}]}' > "$config"
config_digest=$(sha256sum "$config" | cut -d' ' -f1)
config_size=$(stat -c %s "$config")
mv "$config" "$blobs/$config_digest"

manifest=$work/manifest.oci.json
printf '%s' \
  '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",' \
  '"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:'"$config_digest"'","size":'"$config_size"'},' \
  '"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:'"$layer_digest"'","size":'"$layer_size"'}],' \
  '"annotations":{"org.opencontainers.image.version":"'"$v"'","org.opencontainers.image.created":"'"$created"'"}}' > "$manifest"
manifest_digest=$(sha256sum "$manifest" | cut -d' ' -f1)
manifest_size=$(stat -c %s "$manifest")
mv "$manifest" "$blobs/$manifest_digest"

printf '%s' '{"imageLayoutVersion":"1.0.0"}' > "$oci/oci-layout"
printf '%s' \
  '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json",' \
  '"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:'"$manifest_digest"'","size":'"$manifest_size"',' \
  '"platform":{"architecture":"amd64","os":"linux"},' \
  '"annotations":{"org.opencontainers.image.ref.name":"'"$tag"'","io.containerd.image.name":"docker.io/library/'"$tag"'"}}]}' \
  > "$oci/index.json"
# Docker's `docker save` format, for `docker load` before Docker 25.
printf '%s' \
  '[{"Config":"blobs/sha256/'"$config_digest"'","RepoTags":["'"$tag"'"],' \
  '"Layers":["blobs/sha256/'"$layer_digest"'"]}]' > "$oci/manifest.json"

tmp_out=$out.tmp.$$
(
  cd "$oci"
  tar --create --file=- --numeric-owner --owner=0 --group=0 --mode=a+rX,go-w \
    --mtime="@$created_epoch" --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    oci-layout index.json manifest.json blobs
) > "$tmp_out"
mv -f "$tmp_out" "$out"

# --- 6. the check ---------------------------------------------------------
if [ -n "$python" ]; then
  "$python" "$src/deploy/image/check-oci.py" "$out" ||
    { echo "image.sh: $out fails its check" >&2; exit 1; }
fi
end=$(date +%s)
echo "image.sh: $out: $(du -m "$out" | cut -f1) MB ($(stat -c %s "$out") bytes)," \
  "tag $tag, built in $((end - start)) s"
echo "image.sh: layer sha256:$layer_digest ($layer_size bytes gzipped;" \
  "diff_id sha256:$diff_id, $layer_size_raw bytes; the root $root_mb MB)"
echo "image.sh: apptainer build tailsweep.sif oci-archive://$out"
echo "image.sh: docker load -i $out"
