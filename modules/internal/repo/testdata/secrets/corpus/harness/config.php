<?php
$harnessApiKey .= 'pat.@@ttoz4lwnruh72ptu95vdlm.p8x4qiltr584wflx0d9na9kx.m2ycomekxlse7v97urkj';
