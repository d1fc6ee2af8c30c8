# What `cmake --install` puts where, and the Debian package CPack makes of it (deploy/package.sh):
#   bin/tandem-server, tandem-broker, tandem-index, tandem-cli, tandem-train-cost
#   lib/systemd/system/tandem-server.service   (hardened; deploy/tandem-server.service.in)
#   /etc/default/tandem-server                 (the service's flags; a conffile)
#   lib/systemd/system/tandem-broker.service   (hardened; deploy/tandem-broker.service.in; not
#                                               enabled: a host runs a broker when asked to)
#   /etc/default/tandem-broker, /etc/tandem/replicas   (its flags and its nodes; conffiles)
#   share/doc/tandem/                          (README, ARCHITECTURE, index format, LICENSE)
# The package's runtime dependencies are computed by dpkg-shlibdeps from the binaries, so they
# name exactly the Debian libraries the build linked. Configure with -DCMAKE_INSTALL_PREFIX=/usr for
# the paths of a Debian system (/etc/default, the unit's ExecStart), as deploy/package.sh does.
include(GNUInstallDirs)

set(_tandem_programs tandem-server tandem-broker tandem-index tandem-cli tandem-train-cost)
foreach(_program ${_tandem_programs})
  if(TARGET ${_program})
    install(TARGETS ${_program} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  endif()
endforeach()

set(TANDEM_BIN_DIR ${CMAKE_INSTALL_FULL_BINDIR})
set(TANDEM_DOC_DIR ${CMAKE_INSTALL_FULL_DOCDIR})
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_tandem_etc /etc)
else()
  set(_tandem_etc ${CMAKE_INSTALL_FULL_SYSCONFDIR})
endif()
set(TANDEM_DEFAULTS_FILE ${_tandem_etc}/default/tandem-server)
set(TANDEM_BROKER_DEFAULTS_FILE ${_tandem_etc}/default/tandem-broker)
set(TANDEM_REPLICAS_FILE ${_tandem_etc}/tandem/replicas)
# A program's systemd unit (deploy/NAME.service.in, configured with the paths above) and its
# defaults file (deploy/NAME.default, installed as default/NAME).
function(tandem_install_service name)
  configure_file(${CMAKE_SOURCE_DIR}/deploy/${name}.service.in
                 ${CMAKE_BINARY_DIR}/deploy/${name}.service @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/deploy/${name}.service DESTINATION lib/systemd/system
          COMPONENT runtime)
  install(FILES ${CMAKE_SOURCE_DIR}/deploy/${name}.default
          DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/default RENAME ${name} COMPONENT runtime)
endfunction()
tandem_install_service(tandem-server)
tandem_install_service(tandem-broker)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/tandem-broker.replicas
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/tandem RENAME replicas COMPONENT runtime)
install(FILES README.md ARCHITECTURE.md LICENSE index/FORMAT.md deploy/prometheus.yml
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tandem)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Tandem maintainers <tandem@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "search query node: top-k text queries on the CPU and a GPU")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "Tandem answers AND, OR and AND-then-OR top-k BM25 queries over a compressed inverted "
       "index, routing each to a CPU or a GPU engine, behind gRPC with Prometheus metrics. The "
       "package holds the server, the index builder, the command-line client and a hardened "
       "systemd unit. GPUs need NVIDIA's driver; without one the node serves from the CPU.")
set(CPACK_STRIP_FILES ON)
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# systemd for the unit; adduser is not needed: the unit runs as a DynamicUser.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/deploy/debian/conffiles ${CMAKE_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_SOURCE_DIR}/deploy/debian/prerm ${CMAKE_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/packages)
include(CPack)
