package api

// HeadsSigned is how many heads s has signed.
func HeadsSigned(s *Server) int64 { return s.signer.signatures.Load() }
