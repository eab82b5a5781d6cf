#!/bin/sh
# deploy/image/check-rootless.sh ARCHIVE: the image run rootless, as a user
# without root would run it with Apptainer. As a non-root user: unpack the
# image's layer (as Apptainer would), then run
# inside.sh in it in user namespaces: the outer (mapped root) sets up mounts
# (the root read-only, /proc, /dev, /sys, a tmpfs /tmp), the inner
# drops to this user's uid and chroots.
set -eu
archive=$1
work=$(mktemp -d /tmp/imgtest.XXXXXX)
echo "rootless: $(id), work $work"
mkdir "$work/oci" "$work/rootfs"
tar -xf "$archive" -C "$work/oci"
layer=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d[0]["Layers"][0])' "$work/oci/manifest.json")
t0=$(date +%s.%N)
tar -xzf "$work/oci/$layer" -C "$work/rootfs" 2> "$work/untar.err" || { echo "rootless: tar said:"; cat "$work/untar.err"; }
t1=$(date +%s.%N)
echo "rootless: layer unpacked in $(echo "$t0 $t1" | awk '{printf "%.1f", $2-$1}') s, $(du -sm "$work/rootfs" | cut -f1) MB, $(find "$work/rootfs" | wc -l) entries"
uid=$(id -u); gid=$(id -g)
set +e
unshare --user --map-root-user --mount --pid --fork --kill-child sh -c '
  set -e
  R=$1; uid=$2; gid=$3; t=$4
  mount --bind "$R" "$R"
  mount -o remount,bind,ro "$R"
  mount -t proc proc "$R/proc"
  mount --rbind /dev "$R/dev"
  mount --rbind /sys "$R/sys"
  mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
  mount --bind "$t" "$R/mnt"
  exec unshare --user --map-user="$uid" --map-group="$gid" --mount --root="$R" --wd=/tmp \
    /usr/bin/env -i SWEEP_TIMEOUT=${SWEEP_TIMEOUT:-120} DEVICES=${DEVICES:-auto} HOME=/tmp LANG=C.UTF-8 \
    PATH=/opt/tailsweep/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONPATH=/opt/tailsweep/python /bin/sh /mnt/inside.sh
' rootless "$work/rootfs" "$uid" "$gid" "$(dirname "$0")"
rc=$?
set -e
rm -rf "$work"
echo "rootless: rc=$rc"
exit $rc
