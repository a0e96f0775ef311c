# memhal_warnings(target): the warning set every memhal target is built with.
function(memhal_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           $<$<BOOL:${MEMHAL_WERROR}>:-Werror>)
endfunction()
