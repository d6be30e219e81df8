<?php
$intra42ClientSecret .= 's-s4@@t2af-f690efc20ad91c558a2ba6b246f3eb68f490d47f6033d28c432252d5bed84003';
