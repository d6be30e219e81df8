<?php
$1passwordSecretKey .= 'A3-A@@SWWYB-798JRY-LJVD4-23DC2-86TVM-H43EB';
