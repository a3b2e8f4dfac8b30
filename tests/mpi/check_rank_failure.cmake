# ctest script: runs tests/mpi/rank_failure under mpirun and checks that the job ends on its
# own (within TIMEOUT seconds), with a non-zero exit code and the expected message.
# -DMPIEXEC=... -DFLAGS="a;b" -DPROGRAM=... -DRANKS=N -DRANK=R -DMODE=throw|kill -DEXPECT=regex
execute_process(COMMAND ${MPIEXEC} -np ${RANKS} ${FLAGS} ${PROGRAM} ${RANK} ${MODE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(rc MATCHES "timeout")
  message(FATAL_ERROR "the job hung: still running after 60 s (${rc})\n${out}\n${err}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the job exited 0 although rank ${RANK} failed\n${out}\n${err}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match '${EXPECT}' (exit ${rc}):\n${out}\n${err}")
endif()
message(STATUS "exit ${rc}, as expected:\n${err}")
