#!/usr/bin/env bash
# axe-core for the accessibility browser tests (tests/test_browser_a11y.py), from the npm registry.
# Test-only: the app never loads it. Unpacks package/axe.min.js (and its licence) into
# .cache/axe-core-$VERSION/ (git-ignored); does nothing when it is already there.
set -euo pipefail
VERSION=4.14.1
cd "$(dirname "$0")/../.."
dest=".cache/axe-core-$VERSION"
[ -f "$dest/axe.min.js" ] && { echo "$dest/axe.min.js"; exit 0; }
tmp=$(mktemp -d)
(cd "$tmp" && npm pack --silent "axe-core@$VERSION" >/dev/null)
mkdir -p "$dest"
tar -xzf "$tmp/axe-core-$VERSION.tgz" -C "$tmp" package/axe.min.js package/LICENSE
mv "$tmp/package/axe.min.js" "$tmp/package/LICENSE" "$dest/"
rm -rf "$tmp"
echo "$dest/axe.min.js"
