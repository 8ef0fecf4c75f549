#!/usr/bin/env bash
# gpu/pack.sh -- gathers here what gpu/check.sh needs on a bare GPU machine
# (nvcc, ninja and meson there; no GSL, libyaml, Check, pkg-config,
# network or ../shared), into one git-ignored folder to copy there with the
# checkout: gpu/pack/ (about 6 MB).
#
#   gpu/pack/root/usr/   the Debian packages of the C libraries the build
#                        links, unpacked with `dpkg -x` (never into /):
#                        GSL (libgsl-dev, libgsl27, libgslcblas0), libyaml
#                        (libyaml-dev, libyaml-0-2), Check (check) and the
#                        libsubunit its check.pc requires, and pkgconf (the
#                        pkg-config meson calls).  Kept: headers, shared
#                        libraries, Check's libcheck_pic.a (its .pc links
#                        that one), the .pc files and the pkgconf binary;
#                        docs, man pages and the other static libraries go.
#                        The .pc files are rewritten relative to their own
#                        folder (${pcfiledir}), so the pack works wherever
#                        the checkout lies.
#   gpu/pack/traces/     the one trace the GPU workloads read
#                        (workloads/calibrate-replay.yaml, validate-cuda.yaml)
#   gpu/pack/MANIFEST    package versions, the trace's checksum, the glibc
#                        the libraries were built against
#
# OpenBLAS is not packed: only the "cpu" backend uses it (else GSL's
# reference CBLAS), check.sh runs the "cuda" one, and libopenblas0 would
# add about 30 MB to the pack.
#
# The libraries come from this machine's distribution (Debian 12, glibc
# 2.36): they load on a device with glibc 2.36 or newer, which
# gpu/check.sh's preflight checks (ldd) before anything is built.
#
# usage: bash gpu/pack.sh   (from anywhere; needs apt-get download, which
#        reads the apt lists: run `apt-get update` first if they are empty;
#        traces from $KVSIM_TRACES, else ../shared/traces beside the checkout)
# exit:  0 packed, 1 a package or the trace could not be had
set -euo pipefail
cd "$(dirname "$0")/.."
PACK=gpu/pack
TRACE=sharegpt_8k_filtered_stats_llama2_tokenizer.csv
TRACES=${KVSIM_TRACES:-../shared/traces}
PKGS=(libgsl-dev libgsl27 libgslcblas0 libyaml-dev libyaml-0-2 check libsubunit-dev libsubunit0
	pkgconf-bin libpkgconf3)
ARCH=x86_64-linux-gnu

die() {
	echo "gpu/pack.sh: $*" >&2
	exit 1
}

git check-ignore -q "$PACK/MANIFEST" || die "$PACK is not git-ignored: it would travel as tracked files"
[ -f "$TRACES/$TRACE" ] || die "no $TRACES/$TRACE (set KVSIM_TRACES to the traces folder)"
rm -rf "$PACK"
mkdir -p "$PACK/debs" "$PACK/root" "$PACK/traces"
(cd "$PACK/debs" && apt-get download "${PKGS[@]}") ||
	die "apt-get download failed (run apt-get update when the lists are empty)"
for deb in "$PACK"/debs/*.deb; do
	dpkg -x "$deb" "$PACK/root"
done

# keep headers, shared libraries, libcheck_pic.a, .pc files, pkgconf
lib=$PACK/root/usr/lib/$ARCH
rm -rf "$PACK/root/usr/share" "$PACK/root/usr/bin/checkmk" "$PACK/root/usr/bin/gsl-"* \
	"$PACK/root/usr/bin/gsl-histogram" "$PACK/root/usr/bin/gsl-randist"
find "$lib" -name '*.a' ! -name libcheck_pic.a -delete
find "$PACK/root/usr/bin" -mindepth 1 ! -name pkgconf -delete
# ${pcfiledir} is root/usr/lib/$ARCH/pkgconfig: four levels below root
for pc in "$lib"/pkgconfig/*.pc; do
	sed -i -e '1i pack_root=${pcfiledir}/../../../..' \
		-e 's#\(^\|[=[:space:]]\)\(-[IL]\)\?/usr#\1\2${pack_root}/usr#g' "$pc"
done
cp "$TRACES/$TRACE" "$PACK/traces/"
{
	echo "# gpu/pack.sh on $(hostname) at $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "glibc $(ldd --version | head -n 1 | awk '{print $NF}') ($(. /etc/os-release && echo "$PRETTY_NAME"))"
	for deb in "$PACK"/debs/*.deb; do
		dpkg-deb -f "$deb" Package Version | paste -sd ' '
	done
	(cd "$PACK/traces" && sha256sum "$TRACE")
} >"$PACK/MANIFEST"
rm -rf "$PACK/debs"
echo "gpu/pack.sh: $(du -sh "$PACK" | cut -f1) in $PACK:"
cat "$PACK/MANIFEST"
