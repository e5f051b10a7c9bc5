(* OCaml's collector looks up every return address on the stack in its
   frame tables (hashed when the program starts): under reticle the calls
   push the original return addresses and the tables keep their values.
   Exceptions, deep recursion and a major collection; then a stack
   overflow, which OCaml's SIGSEGV handler turns into Stack_overflow only
   when the faulting PC is OCaml code (under calltime the fault is in the
   copy's entry code, a register save below %rsp). *)
exception Boom of int
let rec fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)
let rec deep n = if n = 0 then [] else n :: deep (n - 1)
let rec endless n = if n = 0 then 0 else 1 + endless (n - 1)
let () =
  Printf.printf "fib %d\n" (fib 25);
  let caught = ref 0 in
  for i = 1 to 1000 do
    try if i mod 7 = 0 then raise (Boom i) with Boom n -> caught := !caught + n
  done;
  Printf.printf "caught %d\n" !caught;
  let l = List.init 200000 (fun i -> (i, string_of_int i)) in
  let h = Hashtbl.create 16 in
  List.iter (fun (i, s) -> Hashtbl.replace h i s) l;
  Gc.full_major ();
  Printf.printf "table %d %s\n" (Hashtbl.length h) (Hashtbl.find h 4242);
  Printf.printf "deep %d\n" (List.length (deep 200000));
  (try ignore (List.nth [] 3) with Failure s -> print_endline ("failure " ^ s)
                                 | Invalid_argument s -> print_endline ("invalid " ^ s));
  (try Printf.printf "endless %d\n" (endless 100000000) with Stack_overflow -> print_endline "stack overflow");
  exit 4
