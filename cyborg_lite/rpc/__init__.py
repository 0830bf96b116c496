"""RPC over oslo.messaging: the transport, the in-process inproc://
driver, the server loop the services share, and the clients of the
conductor and of the agent, the only modules another process
imports to call one."""
