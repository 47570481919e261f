#!/bin/bash
# make deb: builds the ringmaster, ringmaster-worker and libringjob-dev packages
# with debhelper (dpkg-buildpackage -us -uc -b) from a clean copy of the tree,
# runs lintian on them, and leaves the .deb files in build/deb/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n '1s/^ringmaster (\([^)]*\)).*/\1/p' "$root/packaging/debian/changelog")
out="$root/build/deb"
stage="$out/ringmaster-$version"

rm -rf "$out"
mkdir -p "$stage"
cd "$root"
if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$stage"
else
    tar --exclude=./build --exclude=./var --exclude=node_modules -cf - . | tar -xf - -C "$stage"
fi
cp -r packaging/debian "$stage/debian"

cd "$stage"
# A release build whatever called us: `make check SANITIZER=...` passes its variables to
# every sub-make through MAKEFLAGS, which would build the packages with the sanitizers.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u SANITIZER -u BUILD \
    DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b 2>&1 | tail -n 25
cd "$out"
ls -1 ./*.deb
if command -v lintian >/dev/null; then
    # Errors fail the build; warnings are printed for the record.
    lintian --fail-on error --suppress-tags-from-file "$root/packaging/lintian-suppress" \
        ./*.changes
fi
