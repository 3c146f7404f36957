#!/usr/bin/env bash
# Builds innolab's offline sandbox image: debootstrap a minimal Debian with Python and what tasks need (numpy,
# scipy, scikit-learn, a CPU build of PyTorch: the distribution's packages), then `docker import` it. The mirror
# and the suite are read from this machine's apt configuration, never written down here.
# With --gpu (for tasks of the `gpu` compute profile): the same, with the GPU build of PyTorch from the package
# index (pip, pinned below) in place of the distribution's CPU build.
# An image of the tag built by another version of this script is rebuilt (its label innolab.build says which).
set -euo pipefail

tag="${1:-innolab/base:latest}"
variant="${2:-cpu}"
GPU_TORCH="torch==2.5.1"  # the GPU build (CUDA libraries as its own dependencies) for --gpu images

packages=python3,python3-numpy,python3-scipy,python3-sklearn,ca-certificates
if [ "$variant" = "--gpu" ]; then
  packages="$packages,python3-pip"
else
  packages="$packages,python3-torch"
fi
build=$( { sha256sum "$0" | cut -c1-16; echo "$variant"; } | sha256sum | cut -c1-16)

if [ "$(docker image inspect -f '{{ index .Config.Labels "innolab.build" }}' "$tag" 2>/dev/null)" = "$build" ]; then
  echo "image $tag already present (build $build)"
  exit 0
fi

# The first deb822 'URIs:' (or one-line 'deb URL SUITE') entry that is not a security mirror.
mirror=""
for f in /etc/apt/sources.list.d/*.sources; do
  [ -e "$f" ] || continue
  mirror=$(awk '/^URIs:/ {print $2}' "$f" | grep -v security | head -n 1 || true)
  [ -n "$mirror" ] && break
done
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; exit}}' /etc/apt/sources.list)
fi
if [ -z "$mirror" ]; then
  echo "no Debian mirror found in the apt sources of this machine" >&2
  exit 1
fi
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
echo "debootstrap $suite into a temporary root (mirror from apt sources)"
debootstrap --variant=minbase --include="$packages" \
  "$suite" "$root" "$mirror" >"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; exit 1; }
rm -f "$root.log"
if [ "$variant" = "--gpu" ]; then
  echo "pip install $GPU_TORCH (the GPU build) into the image"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" python3 -m pip install --quiet --no-cache-dir --break-system-packages "$GPU_TORCH"
  : > "$root/etc/resolv.conf"
fi
# A non-root user for agent code, and an empty workspace it owns.
chroot "$root" useradd --uid 1000 --create-home --shell /bin/bash agent
mkdir -p "$root/workspace" && chroot "$root" chown agent:agent /workspace
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'WORKDIR /workspace' \
  --change 'CMD ["/bin/bash"]' \
  --change "LABEL innolab.build=$build innolab.variant=${variant#--}" \
  - "$tag"
echo "built $tag (build $build)"
