# Installation (cmake --install BUILD --prefix PREFIX): the yoloc command, the runtime library
# with the C and C++ headers, a CMake package (find_package(yoloc) gives the target yoloc::runtime),
# a pkg-config file (pkg-config --cflags --libs yoloc) and the shipped tuning records, where
# `yoloc compile --target cuda` finds them (PREFIX/share/yoloc/records).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(yoloc_runtime_shared PROPERTIES EXPORT_NAME runtime)
target_include_directories(yoloc_runtime_shared INTERFACE
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(TARGETS yoloc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS yoloc_runtime_shared EXPORT yolocTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The C API's header and the C++ API's (yoloc/runtime.h and what it includes): each
# self-contained (tests: header_alone_*).
install(FILES include/yoloc/yoloc.h include/yoloc/runtime.h include/yoloc/detection.h
              include/yoloc/dtype.h include/yoloc/error.h include/yoloc/evaluation.h
              include/yoloc/half.h include/yoloc/image.h include/yoloc/tensor.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/yoloc)
install(DIRECTORY records/ DESTINATION ${CMAKE_INSTALL_DATADIR}/yoloc/records)

set(YOLOC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/yoloc)
install(EXPORT yolocTargets NAMESPACE yoloc:: DESTINATION ${YOLOC_CMAKE_DIR})
file(WRITE ${CMAKE_BINARY_DIR}/yolocConfig.cmake
     "include(\"\${CMAKE_CURRENT_LIST_DIR}/yolocTargets.cmake\")\n")
write_basic_package_version_file(${CMAKE_BINARY_DIR}/yolocConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/yolocConfig.cmake ${CMAKE_BINARY_DIR}/yolocConfigVersion.cmake
        DESTINATION ${YOLOC_CMAKE_DIR})

configure_file(${CMAKE_CURRENT_LIST_DIR}/yoloc.pc.in ${CMAKE_BINARY_DIR}/yoloc.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/yoloc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
