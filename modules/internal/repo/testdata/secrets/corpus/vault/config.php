<?php
$config['vault_batch_token'] = "hvb.@@xx77hfmbnzf8ajirhbffmq4hmlu7zar8z-q7b3_u5yvsvzoc1vmj0l0yzrv6nt02ctqknzbj_bzqyqv5l2elwy3mkf29izh55kryazlqow87zz6x4vn1lhxa51ket1rdz_2za6dltb";
