# pacer_collect_targets(dir out): every target defined in `dir` and the
# directories under it (for the CI pass's build target, CMakeLists.txt, and
# the test programs' build settings, tests/CMakeLists.txt).
function(pacer_collect_targets dir out)
  get_property(found DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    pacer_collect_targets(${sub} more)
    list(APPEND found ${more})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()
