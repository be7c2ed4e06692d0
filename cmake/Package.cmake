# The Debian package: `cmake --build build --target package` writes
# build/widelab_VERSION_ARCH.deb from the install tree (the programs, the
# presets and studies, packaging/linux's desktop files and documentation),
# with its dependencies found by dpkg-shlibdeps. docs/packaging.md says what it
# holds and how it is checked (tests/packaging).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME widelab)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "WideLab maintainers")
set(CPACK_PACKAGE_CONTACT "WideLab maintainers <maintainers@users.noreply.a-seed-a58c7136.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "workbench for wide Transformers: WideNet, multi-path, wide attention")
set(CPACK_PACKAGE_DESCRIPTION
"WideLab builds the architectures of three papers that trade depth for width
(WideNet, the Multi-Path Transformer and Wide Attention) from one set of
knobs, trains them on the CPU, and shows what they learn: curves compared
side by side, attention heads, expert routing, LayerNorm divergence and path
weights. The desktop app (widelab) and the command-line tool (widelab-cli)
share the model library and the shipped presets.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${WIDELAB_HOMEPAGE}")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Without an optimised BLAS, Debian's LibTorch multiplies matrices with the
# reference one, about 50x slower (packaging/install-deps.sh).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libopenblas0-pthread")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# What would make the package wrong is refused when cpack starts, by name.
set(refusals "${WIDELAB_PACKAGE_MISSING}")
if(TORCH_INSTALL_PREFIX MATCHES "^/usr/?$")
  set(WIDELAB_DEB_TORCH ON)
else()
  set(WIDELAB_DEB_TORCH OFF)
  list(APPEND refusals "Debian's LibTorch (libtorch-dev): this build uses ${TORCH_INSTALL_PREFIX}, which no Debian package provides")
endif()
set(WIDELAB_PACKAGE_REFUSALS "${refusals}")
configure_file("${CMAKE_CURRENT_LIST_DIR}/PackageCheck.cmake.in" "${CMAKE_BINARY_DIR}/PackageCheck.cmake" @ONLY)
set(CPACK_PROJECT_CONFIG_FILE "${CMAKE_BINARY_DIR}/PackageCheck.cmake")

include(CPack)
