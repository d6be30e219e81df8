<?php
$flyioAccessToken .= 'fo1_@@8rz-j7r2eqJ2U7affEOO3HJN0j63DInyog3eV-glQSc';
