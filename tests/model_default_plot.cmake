# A model whose plot is on by default, run where gnuplot is missing and no --plot was given, must still run: exit 0,
# say on stderr that it draws no plot, and leave no image behind.
# Usage: cmake -DMODEL=<executable> -DDIR=<empty working directory> -DIMAGE=<default image name> [-DARGS=...]
#        -P model_default_plot.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env PATH=/nonexistent-directory ${MODEL} ${args}
                WORKING_DIRECTORY ${DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${MODEL} without gnuplot exited ${rc} (stderr: ${err})")
endif()
if(NOT err MATCHES "gnuplot not found, so no ${IMAGE}")
  message(FATAL_ERROR "${MODEL}: stderr does not say that no plot is drawn: ${err}")
endif()
if(EXISTS ${DIR}/${IMAGE})
  message(FATAL_ERROR "${MODEL} left ${DIR}/${IMAGE} behind without gnuplot")
endif()
message(STATUS "${MODEL}: exit 0, ${err}")
