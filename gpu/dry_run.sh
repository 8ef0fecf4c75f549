#!/usr/bin/env bash
# gpu/dry_run.sh -- gpu/check.sh on this machine as on a bare GPU machine:
# in a private mount namespace (unshare -m; needs root) the system's GSL,
# libyaml, Check and subunit headers and libraries and its pkg-config are
# hidden (empty folders and /dev/null bound over them), PKG_CONFIG_LIBDIR
# is empty, so only gpu/pack (gpu/pack.sh) can satisfy the build.  With
# no GPU here, a passing dry run builds everything, simulates the GPU
# workloads from the packed trace and stops at the device step, exit 77.
#
# usage: bash gpu/dry_run.sh [OUT]   (OUT default build-gpu/dry; builds in
#        build-gpu with CHECK_JOBS=2 and a one-hour budget: the build is
#        what takes time on a small machine)
# exit:  check.sh's: 77 is the pass here; 1 something missing or failed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d gpu/pack/root ] || { echo "gpu/dry_run.sh: no gpu/pack: run gpu/pack.sh first" >&2; exit 1; }
export DRY_OUT=${1:-build-gpu/dry}
exec unshare -m bash -euc '
	mount --make-rprivate /
	empty=$(mktemp -d)
	lib=/usr/lib/x86_64-linux-gnu
	for f in /usr/include/gsl /usr/include/yaml.h /usr/include/check.h \
		/usr/include/check_stdint.h /usr/include/subunit $lib/libgsl* $lib/libyaml* \
		$lib/libcheck* $lib/libsubunit* $lib/libpkgconf* /usr/bin/pkg-config /usr/bin/pkgconf \
		/usr/bin/x86_64-linux-gnu-pkg-config; do
		[ -e "$f" ] || continue
		if [ -d "$f" ]; then mount --bind "$empty" "$f"; else mount --bind /dev/null "$f"; fi
		echo "dry run: hid $f"
	done
	export PKG_CONFIG_LIBDIR= CHECK_JOBS=2 CHECK_BUILD_S=${CHECK_BUILD_S:-3000}
	export CHECK_BUDGET_S=${CHECK_BUDGET_S:-3600}
	unset PKG_CONFIG
	exec bash gpu/check.sh "$DRY_OUT"'
