#!/usr/bin/env bash
# Builds innolab's offline sandbox base image: debootstrap a minimal Debian with Python, numpy and scipy,
# then `docker import` it. The mirror and the suite are read from this machine's apt configuration,
# never written down here.
set -euo pipefail

tag="${1:-innolab/base:latest}"

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "base image $tag already present"
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
debootstrap --variant=minbase --include=python3,python3-numpy,python3-scipy,ca-certificates \
  "$suite" "$root" "$mirror" >"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; exit 1; }
rm -f "$root.log"
# A non-root user for agent code, and an empty workspace it owns.
chroot "$root" useradd --uid 1000 --create-home --shell /bin/bash agent
mkdir -p "$root/workspace" && chroot "$root" chown agent:agent /workspace
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'WORKDIR /workspace' \
  --change 'CMD ["/bin/bash"]' \
  - "$tag"
echo "built $tag"
